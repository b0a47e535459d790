module herald.local/go-relay

go 1.19
