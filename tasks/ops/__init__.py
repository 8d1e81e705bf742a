"""Operational checks: settings and endpoints in; doctor and smoke reports out."""
