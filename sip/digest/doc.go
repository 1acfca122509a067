// Package digest implements SIP digest access authentication (RFC 3261
// section 22.4 with RFC 8760's algorithms): parsing WWW-Authenticate and
// Proxy-Authenticate challenges, answering them with Authorization and
// Proxy-Authorization credentials, and checking credentials on the
// server side.
//
// Algorithms: MD5, SHA-256 and SHA-512-256, each also in its "-sess"
// form. Quality of protection: "auth", or none for RFC 2069 servers;
// "auth-int" alone is refused (ErrUnsupported). When a server offers
// several challenges (RFC 8760 section 2.4: one per algorithm, strongest
// first), Pick takes the strongest one we support.
package digest
