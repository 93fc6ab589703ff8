# RulesFired test domain, temporal variant: ping/1 is temporal and read with
# a temporal premise; otherwise identical to ../plain.
decl_intent("watch", "Watch pings.").
decl_intent_fact("watch", "ping", "required").
decl_predicate("ping", "input", "A ping from a source.").
decl_arg("ping", 0, "source", "string").
decl_temporal("ping").

tool("watcher").
seen(Source) :- ping(Source)@[From, To].
mandatory_for_intent("watch", "watcher") :- seen(_).
