package claude

import "bytes"

// DecodePlain decodes a line without the decode plans (plan.go), so tests
// can check that the plans change nothing.
func DecodePlain(line []byte) (Message, error) { return decodeMessage(line, false) }

// DecodePlanned reports whether the decode plans took every part of line
// (its type's plan, and those of the values inside), not the general
// decoder.
func DecodePlanned(line []byte) bool {
	typ, _ := memberType(bytes.TrimSpace(line))
	switch typ {
	case "stream_event":
		return decodePlanned(line, new(wireStreamEvent))
	case "assistant":
		return decodePlanned(line, new(AssistantMessage))
	case "user":
		return decodePlanned(line, new(wireUser))
	}
	return false
}
