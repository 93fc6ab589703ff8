# MangleCP kernel contract: the predicates the kernel asserts per request and
# the predicates it reads back to render macro-tools.
#
# Trust layer "schema" (highest). Nothing in a lower layer may define a head
# for a predicate another layer defines, and nothing may define the request
# predicates below: the kernel asserts them with server trust.

# ---- Asserted by the kernel for every request (server trust) ----
Decl intent(Name)
  descr [doc("The name of the intent being evaluated.")].
Decl intent_param(Key, Value)
  descr [doc("One scalar parameter of the intent (string key, value).")].
Decl eval_time(Time)
  descr [doc("The evaluation time (a time constant): the request's eval_time or the server clock. Temporal operators are relative to it.")].
Decl caller(Name)
  descr [doc("The authenticated identity of the request, or \"anonymous\" when authentication is off.")].
Decl caller_permission(Permission)
  descr [doc("A permission of the caller; an anonymous caller (auth off) has \"*\".")].
Decl tool_rank(Tool, Rank)
  descr [doc("A total order over declared tools by name (0 = first), for deterministic tie-breaking: Mangle cannot compare strings.")].

# ---- Manifest declarations (plain facts written by the domain) ----
Decl decl_intent(Name, Description)
  descr [doc("An intent the manifest advertises.")].
Decl decl_intent_fact(Intent, Predicate, Need)
  descr [doc("A predicate an intent needs; Need is \"required\" or \"optional\".")].
Decl decl_predicate(Predicate, Direction, Description)
  descr [doc("A predicate of the facts profile; Direction is input, output or both.")].
Decl decl_arg(Predicate, Index, Name, Type)
  descr [doc("Argument Index (0-based) of a profile predicate: its name and type (string, number, boolean, any).")].
Decl decl_temporal(Predicate)
  descr [doc("The profile predicate accepts temporal annotations.")].

# ---- Tool catalogue (domain) ----
Decl tool(Tool)
  descr [doc("A capability the domain can synthesize into a macro-tool.")].
Decl tool_description(Tool, Text)
  descr [doc("Full description of a tool.")].
Decl tool_summary(Tool, Text)
  descr [doc("One-line description of a tool, for condensed disclosure.")].
Decl tool_action(Tool, Action)
  descr [doc("The registered Go action that executes the tool.")].
Decl tool_param(Tool, Param, ParamType, Description)
  descr [doc("An input parameter; Type is a JSON Schema type name.")].
Decl tool_param_required(Tool, Param)
  descr [doc("The parameter is required.")].
Decl tool_param_enum(Tool, Param, Value)
  descr [doc("An allowed value of the parameter, usually derived from the request facts.")].
Decl tool_param_default(Tool, Param, Value)
  descr [doc("The default value of the parameter.")].
Decl tool_param_pair(Tool, Param, Value, OtherParam, OtherValue)
  descr [doc("Param = Value goes with OtherParam = OtherValue: once a tool has pairs for two parameters, arguments giving both must be one of the pairs (JSON Schema anyOf, validated before the action runs).")].
Decl tool_side_effect(Tool, Effect)
  descr [doc("A side-effect category of the tool (Spec 06 section 2.3).")].
Decl tool_reversible(Tool)
  descr [doc("The tool's effects can be undone.")].
Decl tool_idempotent(Tool)
  descr [doc("Repeated invocations produce the same result.")].
Decl tool_instructions(Tool, Text)
  descr [doc("Context-specific instructions for using the tool.")].
Decl tool_next_intent(Tool, Intent, Description)
  descr [doc("An intent to suggest after the tool ran.")].
Decl tool_valid_from(Tool, UnixNanos)
  descr [doc("validity.not_before of the tool, as Unix nanoseconds or a time; the latest value wins.")].
Decl tool_valid_until(Tool, UnixNanos)
  descr [doc("validity.expires_at of the tool, as Unix nanoseconds or a time; the earliest value wins. Invoking later gives macro_expired.")].
Decl tool_evidence(Tool, Predicate)
  descr [doc("A predicate whose facts led to selecting the tool (metadata.source_rules).")].

Decl tool_skill(Tool, SkillID)
  descr [doc("The skill is necessary for the tool; skills are injected only when a rule proves this.")].
Decl tool_context_resource(Tool, URI, Relevance, Priority)
  descr [doc("A resource relevant to the tool, with why (text) and an integer priority 0-100.")].

# ---- Skill catalogue (plain facts written by the domain) ----
Decl skill(SkillID, Name, Description)
  descr [doc("A skill the domain can inject.")].
Decl skill_content(SkillID, Text)
  descr [doc("The skill's full instructions.")].
Decl skill_content_type(SkillID, MediaType)
  descr [doc("The MIME type of the content; default text/markdown.")].
Decl skill_resource(SkillID, URI, Type, Description)
  descr [doc("A resource the skill references.")].
Decl skill_inline(SkillID)
  descr [doc("Deliver the skill inline in context_injection (small skills); otherwise it is referenced.")].

# ---- Protocol input predicates every domain accepts ----
Decl disclosure_upgrade(MacroID)
  descr [doc("Spec 05 section 5.3: return this macro-tool at full disclosure.")].

# ---- Selection inputs (domain and policy) ----
Decl mandatory_for_intent(Intent, Tool)
  descr [doc("Phase 1 skeleton: the tool is mandatory for the intent.")].
Decl relevant_to_intent(Intent, Tool, Score)
  descr [doc("Phase 3 flesh: the tool is relevant with an integer Score (0-100).")].
Decl prohibited(Tool, Reason)
  descr [doc("Phase 2 exclusion: policy forbids the tool here.")].
Decl conflicts_with(Tool, Other)
  descr [doc("Phase 4: the two tools serve the same purpose; only one is returned.")].
Decl tool_requires(Tool, Dependency)
  descr [doc("Phase 5: the tool needs the dependency in the same response.")].
Decl intent_denied(Intent)
  descr [doc("Policy: the caller may not use this intent; the request fails with auth_insufficient (403).")].
Decl requires_confirmation(Tool)
  descr [doc("Policy: invoking the tool needs a user confirmation token.")].
