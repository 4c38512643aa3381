from er_framework.cli.main import entry

entry()
