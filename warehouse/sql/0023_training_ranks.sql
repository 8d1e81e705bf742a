-- Every node and rank of a training run (flows/train.py): {"nnodes", "nodes": [each node's hopforge process: host,
-- pid, status, trainer exit status], "ranks": [each rank's launcher record: node, host, status, global step]}.
-- Written by node 0 at the end of the run; NULL for dry runs and runs recorded before it.
ALTER TABLE training_runs ADD COLUMN ranks JSON;
