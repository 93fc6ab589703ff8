# Signals derived from the client's facts.
#
# console_event, net_request and net_response are temporal: a fact may carry
# "t" (when it held). "@[From, To]" reads a fact whenever it held; temporal
# operators such as "<-[0m, 5m]" read it relative to eval_time.

console_error(Session, Message, Ts) :- console_event(Session, "error", Message, Ts)@[From, To].
request(Session, Request, Method, Url, Ts) :- net_request(Session, Request, Method, Url, Ts)@[From, To].
response(Session, Request, Status, Ts) :- net_response(Session, Request, Status, Ts)@[From, To].

# A request whose response status is 400 or more.
failed_request(Request) :- response(_, Request, Status, _), Status >= 400.

# A failed request followed, in the same session, by a console error at or
# after its response.
failure_followed_by_error(Request) :-
  failed_request(Request), response(Session, Request, _, RespTs),
  console_error(Session, _, Ts), Ts >= RespTs.

# The five-minute window of Spec 03 section 4.6: a console error that held
# at some time in the five minutes up to eval_time. Facts without "t" hold
# always, so they are always recent.
recent_console_error(Session, Message) :- <-[0m, 5m] console_event(Session, "error", Message, _).
has_recent_console_error(1) :- recent_console_error(_, _).

# Validity window: tools that exist because of a recent error expire five
# minutes after the last timed error ended. An error without an end before
# eval_time (no "t", or still ongoing) keeps them valid.
error_window_end(Nanos) :-
  console_event(_, "error", _, _)@[From, End], eval_time(Now), :time:le(End, Now),
  Until = fn:time:add(End, fn:duration:parse("5m")), Nanos = fn:time:to_unix_nanos(Until).
last_error_window_end(Max) :- error_window_end(N) |> do fn:group_by(), let Max = fn:max(N).
open_console_error(Session) :- console_event(Session, "error", _, _)@[From, End], eval_time(Now), :time:gt(End, Now).
has_open_console_error(1) :- open_console_error(_).

page_has_payment_form(Element) :- interactive_element(Element, "payment", _).
