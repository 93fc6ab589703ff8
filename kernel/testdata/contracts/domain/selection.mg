# Phase inputs. Only declared tools can be selected.
mandatory_for_intent("fix", Tool) :- must(Tool), tool(Tool).
relevant_to_intent("fix", Tool, Score) :- score(Tool, Score), tool(Tool).
mandatory_for_intent("other", "other_tool").

# alpha and beta serve the same purpose (declared in one direction only;
# the pipeline makes it symmetric).
conflicts_with("alpha", "beta").

# delta needs epsilon, which needs zeta; eta needs beta and theta needs
# alpha, the two rivals. gamma stands alone.
tool_requires("delta", "epsilon").
tool_requires("epsilon", "zeta").
tool_requires("eta", "beta").
tool_requires("theta", "alpha").
