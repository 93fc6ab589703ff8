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

wants(Kind) :- change(Kind).
has_change(1) :- change(_).

# An edit preview stays usable for ten minutes (Spec 03 section 4.6). A
# previewed fact without "t" holds always, so it is always recent.
recent_preview(Path, After) :- <-[0m, 10m] previewed(Path, _, After, _, _), entry(Path, "text").
has_recent_preview(1) :- recent_preview(_, _).

# The window of apply_edit ends ten minutes after the last timed preview.
preview_window_end(Nanos) :-
  previewed(_, _, _, _, _)@[From, End], eval_time(Now), :time:le(End, Now),
  Until = fn:time:add(End, fn:duration:parse("10m")), Nanos = fn:time:to_unix_nanos(Until).
last_preview_window_end(Max) :- preview_window_end(N) |> do fn:group_by(), let Max = fn:max(N).
open_preview(Path) :- previewed(Path, _, _, _, _)@[From, End], eval_time(Now), :time:gt(End, Now).
has_open_preview(1) :- open_preview(_).
