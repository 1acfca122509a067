// Package rtpstat computes what a receiver can tell about an RTP stream
// from its headers and arrival times (RFC 3550 section 6.4.1 and
// Appendix A): packets expected, received and lost, loss bursts,
// duplicates, and the interarrival jitter, and collects durations in a
// compact log-scale Histogram for percentiles and charts.
//
// A Stream and a Histogram belong to one goroutine (the socket reader
// that receives the stream); they hold no locks and allocate nothing per
// packet. Copy out a Summary, or Merge histograms, once the reader is done
// or under the reader's own lock.
package rtpstat
