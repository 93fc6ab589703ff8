tool("alpha").
tool("beta").
tool("gamma").
tool("delta").
tool("epsilon").
tool("zeta").
tool("eta").
tool("theta").
tool("other_tool").

tool_action("alpha", "run").
tool_action("beta", "run").
tool_action("gamma", "run").
tool_action("delta", "run").
tool_action("epsilon", "run").
tool_action("zeta", "inspect").
tool_action("eta", "run").
tool_action("theta", "run").
tool_action("other_tool", "inspect").
