package smtptest

import "github.com/emersion/go-sasl"

// loginServer is the server side of the obsolete but still common LOGIN SASL
// mechanism (draft-murchison-sasl-login), which go-sasl only has as a client.
// The client may send the user name as an initial response, as go-sasl does.
type loginServer struct {
	step  int
	user  string
	check func(user, pass string) error
}

func (l *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch l.step {
	case 0:
		if response == nil {
			l.step = 1
			return []byte("Username:"), false, nil
		}
		l.user, l.step = string(response), 2
		return []byte("Password:"), false, nil
	case 1:
		l.user, l.step = string(response), 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		return nil, true, l.check(l.user, string(response))
	}
	return nil, false, sasl.ErrUnexpectedClientResponse
}
