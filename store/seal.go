package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// A sealed record is what a shared store keeps, so that a replica accepts
// only records a replica of its own deployment wrote, unchanged, under the
// name it reads:
//
//	sealed = frame (1 byte, SealFrame) || tag (32 bytes) || record
//	tag    = HMAC-SHA256(key, "manglecp macro record\x00" || len(name) || name || frame || record)
//
// where len(name) is 8 bytes, big-endian.
//
// name is where the store keeps the record (store/redis: the Redis key,
// prefix included), so a record copied to another name does not verify.
// The record carries its own version ([Record.Version]) and is covered by
// the tag, so the version cannot be changed either. key is the secret every
// replica of the deployment shares (store/redis: Options.Key).
const (
	// SealFrame is the version of the frame written by [Seal].
	SealFrame byte = 1
	// MinKeyBytes is the shortest key [Seal] and [Open] are used with.
	MinKeyBytes = 16

	tagBytes   = sha256.Size
	sealDomain = "manglecp macro record\x00"
)

// Seal returns record sealed under key for name.
func Seal(key []byte, name string, record []byte) []byte {
	out := make([]byte, 1+tagBytes, 1+tagBytes+len(record))
	out[0] = SealFrame
	tag(key, name, SealFrame, record, out[1:1])
	return append(out, record...)
}

// Open verifies sealed under key for name, in constant time, and returns
// the record it holds (a subslice of sealed). It fails with an error
// matching [ErrRejected] when the frame is unknown or the tag does not
// verify.
func Open(key []byte, name string, sealed []byte) ([]byte, error) {
	if len(sealed) < 1+tagBytes {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a seal", ErrRejected, len(sealed))
	}
	if sealed[0] != SealFrame {
		return nil, fmt.Errorf("%w: unknown seal frame %d", ErrRejected, sealed[0])
	}
	record := sealed[1+tagBytes:]
	var want [tagBytes]byte
	tag(key, name, sealed[0], record, want[:0])
	if !hmac.Equal(want[:], sealed[1:1+tagBytes]) {
		return nil, fmt.Errorf("%w: the seal does not verify (changed, planted, copied from another key, or written with another store key)", ErrRejected)
	}
	return record, nil
}

func tag(key []byte, name string, frame byte, record, dst []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(sealDomain))
	m.Write(binary.BigEndian.AppendUint64(nil, uint64(len(name))))
	m.Write([]byte(name))
	m.Write([]byte{frame})
	m.Write(record)
	return m.Sum(dst)
}

// CheckKey reports why key is unfit to authenticate what replicas share
// (the store key, a workspace edit key), or nil: shorter than
// [MinKeyBytes], or too predictable to be a secret (fewer than 8 distinct
// bytes, as sixteen "a"s or "abababab..." are, or a run such as
// "abcdefghijklmnop" or "0123456789..."). A key made by a password
// manager or `openssl rand -base64 24` always passes.
func CheckKey(key []byte) error {
	if len(key) < MinKeyBytes {
		return fmt.Errorf("it is %d bytes, shorter than %d", len(key), MinKeyBytes)
	}
	var seen [256]bool
	distinct := 0
	for _, b := range key {
		if !seen[b] {
			seen[b] = true
			distinct++
		}
	}
	if distinct < 8 {
		return fmt.Errorf("it has only %d distinct characters: too easy to guess", distinct)
	}
	steady := 0 // characters that continue the previous step ("abcd", "9876", "0123")
	for i := 2; i < len(key); i++ {
		if int(key[i])-int(key[i-1]) == int(key[i-1])-int(key[i-2]) {
			steady++
		}
	}
	if steady*2 >= len(key)-2 {
		return fmt.Errorf("it is mostly runs of consecutive characters: too easy to guess")
	}
	return nil
}
