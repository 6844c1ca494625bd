"""mkdocs-annotate: review notes on a rendered documentation site, handed to coding agents."""
