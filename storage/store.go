package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Store is the SQL store of the control plane. It is safe for concurrent use.
//
// Store is a holder: each domain's tables have a store of their own,
// reached through Store's fields (Keys, Orgs, Agents, Calls, ...), so no
// one type carries every query; the domain packages of control declare
// the few methods they use and are handed the field. Store's own method
// is the shared plumbing (DB).
type Store struct {
	*base
	// Keys holds API keys and personal tokens.
	Keys *KeyStore
	// Orgs holds users, organizations, their members and invites.
	Orgs *OrgStore
	// Onboarding holds the onboarding checklist.
	Onboarding *OnboardingStore
	// PublishableKeys holds the widget's publishable keys.
	PublishableKeys *PublishableKeyStore
	// Webhooks holds the legacy webhook and the webhook endpoints.
	Webhooks *WebhookStore
	// Billing holds billing accounts, the ledger, payments, auto-reloads and number fees.
	Billing *BillingStore
	// Numbers holds phone numbers, number labels and VoIP connections.
	Numbers *NumberStore
	// Incidents holds the platform's monitoring incidents.
	Incidents *IncidentStore
	// Knowledge holds knowledge documents, chunks and bases.
	Knowledge *KnowledgeStore
	// Agents holds agents and their versions.
	Agents *AgentStore
	// Calls holds calls, call events and grades, call billing, the
	// inbound number lookup and realtime session tokens.
	Calls *CallStore
	// Outbox holds emitted webhook events and their deliveries.
	Outbox *OutboxStore
	// MCPServers holds the MCP servers agents use as tools.
	MCPServers *MCPServerStore
	// Grading holds the grading queue and records grades.
	Grading *GradingStore
	// Issues holds issue reports.
	Issues *IssueStore
	// Scenarios holds test scenarios, suites and test runs.
	Scenarios *ScenarioStore
	// Simulations holds simulation runs and batches.
	Simulations *SimulationStore
}

// base is what every domain store shares: the database, the secret sealer
// and the clock.
type base struct {
	db   *DB
	aead cipher.AEAD
	now  func() time.Time
}

// StoreConfig holds the values a Store needs besides the database.
type StoreConfig struct {
	// SecretKey encrypts secrets that must be shown again (webhook secrets,
	// trunk passwords): 32 bytes for AES-256-GCM.
	SecretKey []byte
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewStore returns a Store over db.
func NewStore(db *DB, cfg StoreConfig) (*Store, error) {
	if len(cfg.SecretKey) != 32 {
		return nil, fmt.Errorf("store: secret key must be 32 bytes, got %d", len(cfg.SecretKey))
	}
	block, err := aes.NewCipher(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	b := &base{db: db, aead: aead, now: now}
	return &Store{base: b, Keys: &KeyStore{b}, Orgs: &OrgStore{b}, Onboarding: &OnboardingStore{b}, PublishableKeys: &PublishableKeyStore{b}, Webhooks: &WebhookStore{b}, Billing: &BillingStore{b}, Numbers: &NumberStore{b}, Incidents: &IncidentStore{b},
		Agents: &AgentStore{b}, Calls: &CallStore{b}, Outbox: &OutboxStore{b}, Knowledge: &KnowledgeStore{b}, MCPServers: &MCPServerStore{b},
		Grading: &GradingStore{b}, Issues: &IssueStore{b}, Scenarios: &ScenarioStore{b}, Simulations: &SimulationStore{b}}, nil
}

// DB returns the underlying database.
func (s *Store) DB() *DB { return s.db }

// nowMS is the current time in stored milliseconds, truncated so that what
// is returned equals what a later read returns.
func (s *base) nowMS() int64 { return s.now().UnixMilli() }

// seal encrypts a secret for storage.
func (s *base) seal(plain string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, []byte(plain), nil)
	return base64.RawStdEncoding.EncodeToString(out), nil
}

// open decrypts a sealed secret.
func (s *base) open(sealed string) (string, error) {
	b, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", errors.New("store: malformed sealed secret")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", errors.New("store: secret does not decrypt with the configured key")
	}
	return string(plain), nil
}

// HashToken is the stored form of a high-entropy bearer credential. A fast
// hash is right here: the input carries 128+ random bits, so there is
// nothing to brute-force, and authentication stays one indexed lookup.
func HashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the OS entropy source is gone; nothing can continue safely
	}
	return hex.EncodeToString(b)
}

// NewUUID returns a version 7 UUID: 48 bits of Unix milliseconds, then a
// 12-bit sequence that keeps ids from one process strictly increasing
// within a millisecond, then random bits. Ordering by id is therefore
// ordering by creation, which list endpoints rely on to break ties
// between rows created in the same millisecond.
func NewUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	uuidMu.Lock()
	now := time.Now().UnixMilli()
	if now > uuidLastMS {
		uuidLastMS, uuidSeq = now, 0
	} else {
		uuidSeq++
		if uuidSeq > 0xfff {
			uuidLastMS++
			uuidSeq = 0
		}
	}
	ms, seq := uuidLastMS, uuidSeq
	uuidMu.Unlock()
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = 0x70 | byte(seq>>8)
	b[7] = byte(seq)
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

var (
	uuidMu     sync.Mutex
	uuidLastMS int64
	uuidSeq    int64
)

// lockMembership locks the membership row of user in org and checks that
// its role is at least min, inside tx. It is the portable form of
// SELECT ... FOR UPDATE: a no-op UPDATE takes the row lock on PostgreSQL
// (and re-checks the condition against the latest committed row), and
// SQLite transactions already hold the database write lock.
func lockMembership(tx *sql.Tx, orgID, userID int64, min Role) (Member, error) {
	res, err := tx.Exec(`UPDATE memberships SET role = role WHERE org_id = $1 AND user_id = $2`, orgID, userID)
	if err != nil {
		return Member{}, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Member{}, ErrNotMember
	}
	m, err := scanMember(tx.QueryRow(memberSelect+` WHERE m.org_id = $1 AND m.user_id = $2`, orgID, userID))
	if err != nil {
		return Member{}, err
	}
	if !m.Role.AtLeast(min) {
		return m, ErrRole
	}
	return m, nil
}
