// Package siptest has test helpers for the sip package and its users: a
// MediaPort whose sessions echo RTP (EchoPort), a CallLog that records
// call ends (Log), an Admitter from a function (AdmitFunc), a runner for
// the sipp load generator and interop peer (Sipp), and a goroutine leak
// check (CheckLeaks).
package siptest
