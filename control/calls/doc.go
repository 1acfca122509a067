// Package calls serves the call log: listing and exporting calls, a
// call's transcript, structured history and grade, and its recording by
// signed, expiring URL (/v1/calls/...). It owns the stored form of call
// events (EventData, the Event kinds), which control's CallLog writes as
// the live call reports them. POST /v1/call is mounted here but served by
// control, which owns admission and the dialer.
package calls
