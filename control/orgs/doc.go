// Package orgs serves organizations and the people in them: the
// organizations a user belongs to (/v1/orgs), the members of the
// credential's organization and their roles (/v1/members, /v1/leave), and
// invites by email (/v1/invites, /v1/invitations/<token>).
//
// Role rules are enforced twice: the router checks the route's minimum
// role, and storage checks the actor's role in the same transaction as the
// change (admins cannot remove admins, only the owner invites admins, the
// owner's role changes only by transferring ownership). After any change
// to membership or roles the authenticator's cache is dropped, so no
// replica keeps serving the old role past its cache TTL.
package orgs
