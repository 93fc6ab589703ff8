# RulesFired test domain, plain variant: the same rules as ../timed, with
# ping/1 an ordinary predicate (kernel/evaluate_test.go).
decl_intent("watch", "Watch pings.").
decl_intent_fact("watch", "ping", "required").
decl_predicate("ping", "input", "A ping from a source.").
decl_arg("ping", 0, "source", "string").

tool("watcher").
seen(Source) :- ping(Source).
mandatory_for_intent("watch", "watcher") :- seen(_).
