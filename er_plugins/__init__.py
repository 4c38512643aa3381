"""Built-in plugins of er-framework (import name ``er_plugins``).

Each module is one domain and is registered under the ``er_framework``
entry-point group in ``pyproject.toml``, exactly as a third-party plugin.
"""
