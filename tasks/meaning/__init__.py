"""What relation labels and entity names mean, as data a user can read and correct: relation profiles (a shipped
lexicon, graph statistics, the user's file and an optional LLM profiler), display names for identifiers and type
nouns read from the graph. Code elsewhere renders these; it does not decide what a label means."""
