package protocol

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConfirmationToken makes a confirmation token (Spec 08 section 4.2) for
// macroID that expires at expiry, signed with key, the confirmation key the
// server and the confirming host share. The format is
// "v1.<expiry unix seconds>.<nonce hex>.<mac>", mac being the unpadded
// base64url HMAC-SHA256 of "v1|<macro_id>|<expiry>|<nonce>". A server
// accepts a token once, before its expiry, for that macro_id only.
func ConfirmationToken(key []byte, macroID string, expiry time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	exp := expiry.Unix()
	return fmt.Sprintf("v1.%d.%s.%s", exp, nonce, confirmationMAC(key, macroID, exp, nonce))
}

func confirmationMAC(key []byte, macroID string, exp int64, nonce string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "v1|%s|%d|%s", macroID, exp, nonce)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ParsedConfirmation is a confirmation token whose signature checked out.
type ParsedConfirmation struct {
	Expiry time.Time
	Nonce  string
}

// VerifyConfirmationToken checks the signature of token for macroID under
// key. It does not check expiry or replay; the caller does.
func VerifyConfirmationToken(key []byte, token, macroID string) (*ParsedConfirmation, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return nil, fmt.Errorf("the token is not a v1 confirmation token")
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("the token's expiry is not a number")
	}
	if !hmac.Equal([]byte(confirmationMAC(key, macroID, exp, parts[2])), []byte(parts[3])) {
		return nil, fmt.Errorf("the signature does not verify: the token was signed with another confirmation key, or for another macro-tool")
	}
	return &ParsedConfirmation{Expiry: time.Unix(exp, 0), Nonce: parts[2]}, nil
}
