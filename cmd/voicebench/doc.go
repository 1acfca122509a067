// Command voicebench is the load generator and quality probe for voice
// media nodes: it keeps N concurrent calls up against a target (voiced's
// SIP/RTP front door, its realtime WebSocket, its WebRTC mic sessions,
// rtpengine through ng, or its own UDP echo floor), measures every call
// and every measurement window, finds the largest load that keeps a
// quality bound (--find-max), and writes JSON, Markdown and SVG charts.
//
//	voicebench [load] --mode sip|rtpengine|echo|ws|webrtc [flags]
//	voicebench echo --count N --list FILE
//	voicebench compare --out FILE NAME=RESULT-DIR...
//
// It is an independent client: its SIP user agent is its own (on sipgo),
// not voiced's sip package. The packages under internal/ are its parts:
// load (the generator), udp (batched sockets), rtpstat (RFC 3550
// statistics), audio (the prompt and onset detection), sipua, rtpe and ng,
// rtws, rtc, echo (targets), procstat, report and chart (outputs).
package main
