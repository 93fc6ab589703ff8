# Signals derived from the client's facts.

console_error(Session, Message, Ts) :- console_event(Session, "error", Message, Ts).

# A request whose response status is 400 or more.
failed_request(Request) :- net_response(_, Request, Status, _), Status >= 400.

# A console error in the same session at or after a failed response.
error_after_failure(Request, Message) :-
  failed_request(Request), net_response(Session, Request, _, RespTs),
  console_error(Session, Message, Ts), Ts >= RespTs.

page_has_payment_form(Element) :- interactive_element(Element, "payment", _).
