# Signals derived from the client's facts and from the file system.
#
# entry(Path, Kind) is an external predicate computed by Go for every path
# of a focus, mentioned or previewed fact: Kind is "dir", "text", "media",
# "binary", "missing" or "outside" (not a valid path inside a root).
# root_count(N), external too, is the number of roots the server has.

has_focus(1) :- focus(_).
focus_outside(Path) :- focus(Path), entry(Path, "outside").
focus_missing(Path) :- focus(Path), entry(Path, "missing").
several_roots(1) :- root_count(N), N > 1.
focus_dir(Path) :- focus(Path), entry(Path, "dir").
focus_file(Path) :- focus(Path), entry(Path, "text").
focus_file(Path) :- focus(Path), entry(Path, "media").
focus_file(Path) :- focus(Path), entry(Path, "binary").

text_file(Path) :- mentioned(Path), entry(Path, "text").
media_file(Path) :- mentioned(Path), entry(Path, "media").
missing_file(Path) :- mentioned(Path), entry(Path, "missing").
binary_file(Path) :- mentioned(Path), entry(Path, "binary").
existing(Path) :- mentioned(Path), entry(Path, "dir").
existing(Path) :- mentioned(Path), entry(Path, "text").
existing(Path) :- mentioned(Path), entry(Path, "media").
existing(Path) :- mentioned(Path), entry(Path, "binary").

text_count(N) :- text_file(P) |> do fn:group_by(), let N = fn:count().
several_text_files(1) :- text_count(N), N >= 2.
# "A few": read together at once (tools.mg).
few_text_files(1) :- text_count(N), N >= 2, N <= 4.

has_mentioned(1) :- mentioned(_).
wants(Kind) :- change(Kind).
has_change(1) :- change(_).

# An edit can be applied only with an edit id this server issued at the
# preview. previewed(...) is a client fact, which a client can write
# itself, so it counts only through signed_edit(Edit, Path, Diff, Until),
# an external predicate computed by Go: the previewed facts whose id is
# signed with the server's edit key for that path, change and diff, and
# has not expired by the server's clock (Until, in Unix nanoseconds).
# apply_edit checks the rest (the identity, the file, the result) itself.
open_edit(Edit, Diff, Until) :- signed_edit(Edit, Path, Diff, Until), entry(Path, "text").
has_open_edit(1) :- open_edit(_, _, _).

# The window of apply_edit ends when the last of the open edits expires.
last_edit_expiry(Max) :- open_edit(_, _, U) |> do fn:group_by(), let Max = fn:max(U).
