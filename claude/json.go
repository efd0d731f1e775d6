package claude

import (
	"errors"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Decoding uses go-json-experiment/json: on the message mix a session
// reads (mostly token deltas) it measured about 2.7 times faster than
// encoding/json with far fewer allocations (see BenchmarkDecodeMix), and
// decoding is most of what the read loop does. Encoding, which is rare
// and small, stays on encoding/json.
//
// The options make decoding as forgiving as the CLI may need: a duplicate
// key or a stray invalid UTF-8 byte must not cost a user a message.
var decodeOptions = jsonv2.JoinOptions(
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// unmarshal decodes one JSON value into v.
func unmarshal(b []byte, v any) error {
	return jsonv2.Unmarshal(b, v, decodeOptions)
}

// isTypeError reports a JSON value of an unexpected type (a field that
// changed shape in a newer CLI), as opposed to malformed JSON.
func isTypeError(err error) bool {
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
		return false
	}
	var sem *jsonv2.SemanticError
	return errors.As(err, &sem)
}
