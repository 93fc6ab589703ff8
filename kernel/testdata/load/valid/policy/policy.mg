# A minimal valid domain: one intent, one client predicate, one tool.
prohibited(Tool, "blocked") :- block(Tool).
