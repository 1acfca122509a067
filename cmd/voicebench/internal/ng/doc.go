// Package ng speaks rtpengine's ng control protocol: bencoded
// dictionaries over UDP, each prefixed with a cookie that pairs a reply
// with its request ("<cookie> <bencode>").
//
// Bencode (BEP 3) has four types: byte strings ("4:spam"), integers
// ("i42e"), lists ("l...e") and dictionaries ("d...e", keys sorted as raw
// byte strings). Append encodes Go strings, []byte, integers, bools
// (as 0/1), []string, []any, map[string]any and map[string]string;
// Decode returns string, int64, []any and map[string]any.
//
// The Client sends a request, resends it every RetryInterval while no
// reply came (rtpengine answers a repeated cookie from its cache, so a
// resend never runs a command twice), and turns a reply whose "result" is
// "error" into an *Error. One reader goroutine, owned by the Client and
// stopped by Close, dispatches replies, so any number of requests may be
// in flight from any goroutines.
package ng
