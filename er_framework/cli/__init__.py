"""The `er` command: one module per verb; :func:`er_framework.cli.main.main` is the entry point."""
