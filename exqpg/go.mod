module github.com/exqgo/exq/exqpg

go 1.25.0

require github.com/exqgo/exq v0.0.0-20261201234809-a697fb6d8b88

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)
