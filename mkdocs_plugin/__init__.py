"""The MkDocs plugin `annotate` (issue #6): review notes on `mkdocs serve`."""
