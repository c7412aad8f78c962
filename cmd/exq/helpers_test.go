package main

import "github.com/redis/go-redis/v9"

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
