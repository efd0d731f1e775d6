package claude

// DecodeGeneral decodes a line without the token-delta fast path, so
// tests can check the two agree.
func DecodeGeneral(line []byte) (Message, error) {
	e := new(StreamEvent)
	if err := e.decode(line); err != nil {
		return nil, err
	}
	e.Raw = line
	return e, nil
}

// DecodeDeltaFast exposes the fast path to tests.
func DecodeDeltaFast(line []byte) (Message, bool) {
	e, ok := decodeDeltaFast(line)
	if ok {
		e.Raw = line
	}
	return e, ok
}

// DecodeAssistantFast exposes the assistant fast path to tests.
func DecodeAssistantFast(line []byte) (Message, bool) {
	a, ok := decodeAssistantFast(line)
	if ok {
		a.Raw = line
	}
	return a, ok
}

// DecodeAssistantGeneral decodes an assistant line without the fast path.
func DecodeAssistantGeneral(line []byte) (Message, error) {
	a := new(AssistantMessage)
	if err := unmarshal(line, a); err != nil {
		return nil, err
	}
	a.Raw = line
	return a, nil
}

// DecodeUserFast exposes the user fast path to tests.
func DecodeUserFast(line []byte) (Message, bool) {
	u, ok := decodeUserFast(line)
	if ok {
		u.Raw = line
	}
	return u, ok
}

// DecodeUserGeneral decodes a user line without the fast path.
func DecodeUserGeneral(line []byte) (Message, error) {
	u := new(UserMessage)
	if err := unmarshal(line, u); err != nil {
		return nil, err
	}
	u.Raw = line
	return u, nil
}
