# Policy of the contracts test domain: a client "block" fact prohibits a
# tool, whatever else selects it (Contract 2).
prohibited(Tool, "blocked by the client") :- block(Tool).
