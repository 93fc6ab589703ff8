# Signals derived from the client's facts.

console_error(Session, Message, Ts) :- console_event(Session, "error", Message, Ts).

# A request whose response status is 400 or more.
failed_request(Request) :- net_response(_, Request, Status, _), Status >= 400.

# A failed request followed, in the same session, by a console error at or
# after its response.
failure_followed_by_error(Request) :-
  failed_request(Request), net_response(Session, Request, _, RespTs),
  console_error(Session, _, Ts), Ts >= RespTs.

page_has_payment_form(Element) :- interactive_element(Element, "payment", _).
