package protocol

// Inbound is one message as a transport received it, with what the
// transport knows about its context. Transports fill it; the server
// decodes and validates Data itself so that every transport behaves alike.
type Inbound struct {
	// Data is the raw message.
	Data []byte
	// Expect, when set, is the only message type the endpoint accepts
	// (HTTP paths map to one type each).
	Expect MessageType
	// Credentials are the caller's credentials, or nil.
	Credentials *Credentials
	// Peer identifies the connection (a remote address) for rate limiting
	// and logs when the caller is anonymous.
	Peer string
	// Caller, when set, is who the transport authenticated the request as
	// (Handler.Authenticate on Credentials): the handler trusts it and does
	// not authenticate the request again. Nil: the handler authenticates
	// Credentials itself. An authenticate message's own credentials are
	// always checked.
	Caller *Caller
	// Progress, when set, receives progress notes of a long invocation
	// (session transports only, Spec 07 section 7); the transport sends them
	// as progress messages before the final response.
	Progress func(Progress)
}

// Caller is who sent a request, as the server authenticated it.
type Caller struct {
	// Identity is the configured identity's name, or the token's subject;
	// "" for an anonymous caller (authentication off).
	Identity string
	// Anonymous is true when authentication is off.
	Anonymous bool
	// Permissions are what policy rules read (Spec 08 section 4).
	Permissions []string
	// TrustLevel and AutoConfirmEffects waive confirmation (Spec 08
	// section 4.3) for an identity configured so.
	TrustLevel         string
	AutoConfirmEffects []string
}

// Credentials are what a caller presented (Spec 08 section 3).
type Credentials struct {
	// Scheme is "bearer" or "api_key".
	Scheme string
	// Token is the secret. Never log it.
	Token string
}

// The authentication schemes of Spec 04 section 3.2.10.
const (
	SchemeBearer = "bearer"
	SchemeAPIKey = "api_key"
	SchemeOAuth2 = "oauth2"
)
