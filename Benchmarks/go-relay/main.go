// Command go-relay is the reference that Benchmarks/relay-load.sh measures `herald relay` against
// (issue 34): the WebPush → APNs relay of ../shared/RELAY.md written the plain way with Go's
// standard library only — net/http serving HTTP/1.1 to the sender, net/http's HTTP/2 client
// towards APNs. Per request it does what Sources/Relay (WebPushTranslation, RelayService+Push)
// does for the benchmark's requests: validate the route, token, Content-Encoding and body size,
// build the same APNs payload and headers, send it with a cached provider JWT, answer 202.
//
// One difference on purpose: herald answers 202 once the push is handed to its APNs connection,
// without waiting for Apple; a blocking http.Client call is Go's ordinary way, so this relay
// answers after APNs has answered (202 either way, as RELAY.md asks; 503 when APNs cannot be
// reached). There is no /metrics, no rate limiting and no access log (the benchmark runs herald
// with LOG_LEVEL=error, which has none either).
//
// Configuration: herald relay's variables — APNS_AUTH_KEY (PEM contents) or APNS_AUTH_KEY_FILE,
// APNS_KEY_ID, APPLE_TEAM_ID, TOPIC, APNS_PRODUCTION_URL, APNS_SANDBOX_URL, APNS_CA_FILE, PORT.
// It listens on 127.0.0.1 only.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

const (
	maxBodySize    = 4096             // RFC 8030: 413 only above this (WebPushTranslation.maxBodySize)
	maxPayloadSize = 4096             // APNs' limit for an alert push
	maxTTL         = 30 * 24 * 3600   // WebPushTranslation.maxTTLSeconds
	tokenRefresh   = 50 * time.Minute // APNSTokenManager.refreshInterval
	retryAfter     = "10"             // RelayService.Configuration.retryAfterSeconds
	payloadPrefix  = `{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":`
)

type relay struct {
	client               *http.Client
	production, sandbox  string // APNs base URLs
	topic, keyID, teamID string
	key                  *ecdsa.PrivateKey
	jwt                  atomic.Pointer[providerToken]
	jwtMu                sync.Mutex
	idPrefix             [8]byte // apns-id: a random prefix and a counter, unique rather than secret
	idCounter            atomic.Uint64
}

type providerToken struct {
	header string // "bearer <JWT>"
	made   time.Time
}

func main() {
	r := &relay{
		production: env("APNS_PRODUCTION_URL", "https://api.push.apple.com"),
		sandbox:    env("APNS_SANDBOX_URL", "https://api.sandbox.push.apple.com"),
		topic:      required("TOPIC"), keyID: required("APNS_KEY_ID"), teamID: required("APPLE_TEAM_ID"),
	}
	r.key = loadKey()
	if _, err := rand.Read(r.idPrefix[:]); err != nil {
		log.Fatalf("go-relay: no randomness for apns-id: %v", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if path := os.Getenv("APNS_CA_FILE"); path != "" { // added to the system store, as herald does
		pemBytes, err := os.ReadFile(path)
		if err != nil || !roots.AppendCertsFromPEM(pemBytes) {
			log.Fatalf("go-relay: APNS_CA_FILE=%s holds no PEM certificate (%v)", path, err)
		}
	}
	r.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		ForceAttemptHTTP2:  true, // one multiplexed connection per host, more only when it is full
		TLSClientConfig:    &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DisableCompression: true, // no accept-encoding: herald sends none
	}}
	if _, err := r.token(); err != nil {
		log.Fatalf("go-relay: cannot sign a provider token with APNS_AUTH_KEY: %v", err)
	}

	server := &http.Server{Addr: "127.0.0.1:" + env("PORT", "3000"), Handler: r, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() { // stop accepting, finish in-flight relays (bounded wait), exit 0
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		server.Shutdown(ctx)
	}()
	if err := server.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("go-relay: %v", err)
	}
}

// ServeHTTP routes as RELAY.md's table: GET/HEAD / is the health check, POST
// /push/{device_token}/{id} the relay, anything else 404.
func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.EscapedPath()
	if path == "/" && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
		w.WriteHeader(http.StatusOK)
		return
	}
	segments := strings.Split(path, "/") // ["", "push", token, id]
	if req.Method != http.MethodPost || len(segments) != 4 || segments[1] != "push" || segments[2] == "" || segments[3] == "" {
		fail(w, 404, "not_found", "no such route")
		return
	}
	r.push(w, req, segments[2], segments[3])
}

// push mirrors WebPushTranslation.translate (checks in the same order), then RelayService's send.
func (r *relay) push(w http.ResponseWriter, req *http.Request, rawToken, rawID string) {
	encoding := contentEncoding(req.Header)
	if encoding == "" {
		fail(w, 415, "unsupported_encoding", "Content-Encoding must be exactly one of aes128gcm or aesgcm")
		return
	}
	token, ok := deviceToken(rawToken)
	if !ok {
		fail(w, 400, "invalid_device_token", "the device token must be 64 to 200 hexadecimal characters (an even number)")
		return
	}
	id, err := url.PathUnescape(rawID)
	if err != nil || !utf8.ValidString(id) {
		fail(w, 400, "invalid_id", "the subscription id is not valid percent-encoded UTF-8")
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBodySize+1))
	if err != nil {
		fail(w, 400, "unreadable_body", "the request body could not be read")
		return
	}
	if len(body) > maxBodySize {
		fail(w, 413, "payload_too_large", fmt.Sprintf("the encrypted body is over %d bytes, the most WebPush allows", maxBodySize))
		return
	}
	var salt, dh string
	if encoding == "aesgcm" {
		if salt = parameter("salt", req.Header.Get("Encryption")); salt == "" {
			fail(w, 400, "missing_salt", "aesgcm needs an Encryption header with a salt parameter")
			return
		}
		if dh = parameter("dh", req.Header.Get("Crypto-Key")); dh == "" {
			fail(w, 400, "missing_dh", "aesgcm needs a Crypto-Key header with a dh parameter")
			return
		}
	}
	payload := buildPayload(encoding, id, body, salt, dh)
	if len(payload) > maxPayloadSize { // a 4xx would make Mastodon delete the subscription
		log.Printf("go-relay: relay body too large for APNs: not sent (token %s…, %d bytes)", token[:8], len(payload))
		w.WriteHeader(http.StatusAccepted)
		return
	}

	base := r.production
	if q := req.URL.Query()["sandbox"]; len(q) > 0 && q[len(q)-1] == "true" {
		base = r.sandbox
	}
	apns, _ := http.NewRequestWithContext(req.Context(), http.MethodPost, base+"/3/device/"+token, strings.NewReader(payload))
	h := apns.Header // lowercase names, as sent on HTTP/2
	bearer, err := r.token()
	if err != nil {
		unavailable(w, "no provider token: "+err.Error())
		return
	}
	h["authorization"] = []string{bearer}
	h["apns-id"] = []string{r.nextID()}
	h["apns-push-type"] = []string{"alert"}
	h["User-Agent"] = []string{""} // none, as herald sends none
	if ttl, err := strconv.Atoi(strings.TrimSpace(req.Header.Get("TTL"))); err == nil && ttl >= 0 {
		if ttl == 0 {
			h["apns-expiration"] = []string{"0"}
		} else {
			h["apns-expiration"] = []string{strconv.FormatInt(time.Now().Unix()+int64(min(ttl, maxTTL)), 10)}
		}
	}
	priority := "10" // an alert's default; Urgency very-low/low lowers it
	switch strings.ToLower(strings.TrimSpace(req.Header.Get("Urgency"))) {
	case "very-low", "low":
		priority = "5"
	}
	h["apns-priority"] = []string{priority}
	h["apns-topic"] = []string{r.topic}
	if collapse := strings.TrimSpace(req.Header.Get("Topic")); collapse != "" && len(collapse) <= 64 {
		h["apns-collapse-id"] = []string{collapse}
	}

	resp, err := r.client.Do(apns)
	if err != nil {
		unavailable(w, "APNs cannot be reached right now")
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK { // herald logs and counts refusals; the sender still gets 202
		log.Printf("go-relay: APNs refused a push to %s…: %d", token[:8], resp.StatusCode)
	}
	w.WriteHeader(http.StatusAccepted)
}

// contentEncoding is the single Content-Encoding, lowercased, when it is aes128gcm or aesgcm.
func contentEncoding(header http.Header) string {
	values := header.Values("Content-Encoding")
	if len(values) != 1 {
		return ""
	}
	switch value := strings.ToLower(strings.TrimSpace(values[0])); value {
	case "aes128gcm", "aesgcm":
		return value
	}
	return ""
}

// deviceToken lowercases a hexadecimal token of even length, 64 to 200 characters (APNSDeviceToken).
func deviceToken(raw string) (string, bool) {
	if len(raw) < 64 || len(raw) > 200 || len(raw)%2 != 0 {
		return "", false
	}
	if _, err := hex.DecodeString(raw); err != nil {
		return "", false
	}
	return strings.ToLower(raw), true
}

// parameter is the bare value of name in a `k=v; k2="v2", …` header (WebPushTranslation.parameter).
func parameter(name, header string) string {
	for _, item := range strings.FieldsFunc(header, func(c rune) bool { return c == ';' || c == ',' }) {
		key, value, found := strings.Cut(item, "=")
		if !found || strings.ToLower(strings.TrimSpace(key)) != name {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		return value
	}
	return ""
}

// buildPayload writes the bytes WebPushTranslation.payload writes: keys sorted, `m` the body in
// URL-safe base64 with padding, `k` and `s` only for aesgcm.
func buildPayload(encoding, id string, body []byte, salt, dh string) string {
	var b strings.Builder
	b.Grow(len(payloadPrefix) + len(id) + base64.URLEncoding.EncodedLen(len(body)) + len(salt) + len(dh) + 48)
	b.WriteString(payloadPrefix)
	quote(&b, encoding)
	b.WriteString(`,"i":`)
	quote(&b, id)
	if dh != "" {
		b.WriteString(`,"k":`)
		quote(&b, dh)
	}
	b.WriteString(`,"m":"`)
	encoded := make([]byte, base64.URLEncoding.EncodedLen(len(body)))
	base64.URLEncoding.Encode(encoded, body)
	b.Write(encoded)
	b.WriteByte('"')
	if salt != "" {
		b.WriteString(`,"s":`)
		quote(&b, salt)
	}
	b.WriteByte('}')
	return b.String()
}

// quote writes s as a JSON string, slashes unescaped (JSONEncoder's .withoutEscapingSlashes).
func quote(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// token is the cached "bearer <ES256 JWT>", signed again once it is 50 minutes old.
func (r *relay) token() (string, error) {
	if t := r.jwt.Load(); t != nil && time.Since(t.made) < tokenRefresh {
		return t.header, nil
	}
	r.jwtMu.Lock() // one signer; the others wait for its token
	defer r.jwtMu.Unlock()
	if t := r.jwt.Load(); t != nil && time.Since(t.made) < tokenRefresh {
		return t.header, nil
	}
	now := time.Now()
	b64 := base64.RawURLEncoding
	signingInput := b64.EncodeToString([]byte(`{"alg":"ES256","kid":"`+r.keyID+`"}`)) + "." +
		b64.EncodeToString([]byte(`{"iss":"`+r.teamID+`","iat":`+strconv.FormatInt(now.Unix(), 10)+`}`))
	digest := sha256.Sum256([]byte(signingInput))
	sigR, sigS, err := ecdsa.Sign(rand.Reader, r.key, digest[:])
	if err != nil {
		return "", err
	}
	signature := make([]byte, 64) // JWS ES256: r and s, 32 bytes each
	sigR.FillBytes(signature[:32])
	sigS.FillBytes(signature[32:])
	t := &providerToken{header: "bearer " + signingInput + "." + b64.EncodeToString(signature), made: now}
	r.jwt.Store(t)
	return t.header, nil
}

// nextID is a version-4-shaped lowercase UUID, unique within the process (APNSIdentifier.next).
func (r *relay) nextID() string {
	var u [16]byte
	copy(u[:8], r.idPrefix[:])
	binary.BigEndian.PutUint64(u[8:], r.idCounter.Add(1))
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u[:])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

func loadKey() *ecdsa.PrivateKey {
	pemText := []byte(os.Getenv("APNS_AUTH_KEY"))
	if len(pemText) == 0 {
		path := required("APNS_AUTH_KEY_FILE")
		var err error
		if pemText, err = os.ReadFile(path); err != nil {
			log.Fatalf("go-relay: cannot read APNS_AUTH_KEY_FILE: %v", err)
		}
	}
	block, _ := pem.Decode(pemText)
	if block == nil {
		log.Fatal("go-relay: APNS_AUTH_KEY is not PEM (the .p8 file's contents, newlines kept)")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	key, ok := parsed.(*ecdsa.PrivateKey)
	if err != nil || !ok || key.Curve.Params().BitSize != 256 {
		log.Fatalf("go-relay: APNS_AUTH_KEY is not a P-256 PKCS#8 key (%v)", err)
	}
	return key
}

func fail(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, message)
}

func unavailable(w http.ResponseWriter, message string) {
	w.Header().Set("Retry-After", retryAfter)
	fail(w, 503, "apns_unavailable", message+"; retry later")
}

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func required(name string) string {
	value := os.Getenv(name)
	if value == "" {
		log.Fatalf("go-relay: %s is required (as for herald relay)", name)
	}
	return value
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
