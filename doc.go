// Package voiced is the root of the voiced module: an open, self-hostable
// platform for voice AI agents. The code lives in the packages below it
// (see README.md and DESIGN.md); this package holds only the test that
// enforces the import directions between them.
package voiced
