# Agent: worker thread, context builder and the ReAct loop.
