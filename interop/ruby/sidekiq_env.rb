# Connects Sidekiq 6.4 (Debian's ruby-sidekiq), as client and as server, to the Redis the Go
# test chose. Every script of this folder loads it first.
#   REDIS_URL        required: the interop database of the test Redis (never a default server)
#   REDIS_NAMESPACE  optional: Sidekiq's `namespace:` option (needs ruby-redis-namespace), so
#                    "exq" makes Sidekiq use exq:queue:default, exq:retry, ... as Exq and exq do
require "sidekiq"

# redis-rb 4.8 warns about every BRPOP and SADD Sidekiq 6.4 sends; the warnings say nothing
# about these tests and would bury a failure in the logs.
Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)

module InteropEnv
  def self.redis_options
    opts = {url: ENV.fetch("REDIS_URL") { abort "#{$PROGRAM_NAME}: REDIS_URL is not set" }}
    ns = ENV["REDIS_NAMESPACE"].to_s
    opts[:namespace] = ns unless ns.empty?
    opts
  end
end

Sidekiq.configure_client { |config| config.redis = InteropEnv.redis_options }
Sidekiq.configure_server { |config| config.redis = InteropEnv.redis_options }
