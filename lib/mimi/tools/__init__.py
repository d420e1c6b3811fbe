# The agent's tools: their table (tools/table.py, data), the registry that reads it and
# runs them (tools/registry.py), and one module per kind of tool, loaded when called.
# Nothing here: importing a tool's module does not bring the table (on a short heap it
# goes while a tool runs and while the turn's LLM calls run).
