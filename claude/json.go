package claude

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"

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

// unmarshal decodes one JSON value into v. The CLI writes JavaScript
// numbers, and one it computes may carry a fraction where Tether's type,
// as the SDK's declaration means it, holds a whole number: CLI 2.1.337
// wrote a cron job's nextFireAt (Unix milliseconds) as
// 1796634390349.4116, and the whole message failed to decode. So when
// the strict decode fails on a number going into an integer, v is
// decoded again with wholeNumberOptions, which round such a number to
// the nearest integer; one out of range, or a value that is not a
// number, still fails. The retry costs nothing on the common path: the
// decode plans and the strict decoder run first, and only a line that
// fails them is read twice.
func unmarshal(b []byte, v any) error {
	err := jsonv2.Unmarshal(b, v, decodeOptions)
	if err != nil && isFractionError(err) {
		reflect.ValueOf(v).Elem().SetZero() // what the first pass filled
		err = jsonv2.Unmarshal(b, v, wholeNumberOptions)
	}
	return err
}

// isFractionError reports a JSON number that an integer could not hold,
// the one failure a second decode with wholeNumberOptions may mend.
func isFractionError(err error) bool {
	var sem *jsonv2.SemanticError
	if !errors.As(err, &sem) || sem.JSONKind != '0' || sem.GoType == nil {
		return false
	}
	switch sem.GoType.Kind() {
	case reflect.Int, reflect.Int64:
		return true
	}
	return false
}

// wholeNumberOptions decode like decodeOptions but round a number with a
// fraction or an exponent going into an int or int64 (see unmarshal).
var wholeNumberOptions = jsonv2.JoinOptions(decodeOptions, jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
	jsonv2.UnmarshalFunc(func(b []byte, v *int64) error {
		n, err := wholeNumber(b, 64)
		if err == nil {
			*v = n
		}
		return err
	}),
	jsonv2.UnmarshalFunc(func(b []byte, v *int) error {
		n, err := wholeNumber(b, strconv.IntSize)
		if err == nil {
			*v = int(n)
		}
		return err
	}),
)))

// wholeNumber reads a JSON value as a signed integer of bits bits:
// null is 0 (as the decoder has it), a number with a fraction or an
// exponent is rounded.
func wholeNumber(b []byte, bits int) (int64, error) {
	s := string(b)
	if s == "null" {
		return 0, nil
	}
	if len(s) == 0 || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, fmt.Errorf("cannot unmarshal %s into an integer", jsontext.Value(b).Kind())
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err == nil {
		return n, nil
	}
	f, ferr := strconv.ParseFloat(s, 64)
	if ferr != nil {
		return 0, err
	}
	f = math.Round(f)
	if limit := math.Ldexp(1, bits-1); f < -limit || f >= limit {
		return 0, fmt.Errorf("number %s out of range for a %d-bit integer", s, bits)
	}
	return int64(f), nil
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
