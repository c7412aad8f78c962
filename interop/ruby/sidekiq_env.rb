# Connects Sidekiq, as client and as server, to the Redis the Go test chose. Every script of
# this folder loads it first. It works with Sidekiq 6.4 (Debian's ruby-sidekiq, on redis-rb) and
# with Sidekiq 7 and 8 (on redis-client; run from their source with EXQ_INTEROP_RUBYLIB).
#   REDIS_URL        required: the interop database of the test Redis (never a default server)
#   REDIS_NAMESPACE  optional: Sidekiq 6's `namespace:` option (needs ruby-redis-namespace), so
#                    "exq" makes Sidekiq use exq:queue:default, exq:retry, ... as Exq and exq do.
#                    Sidekiq 7 and 8 refuse a namespace: the Go side passes none to them.
require "sidekiq"

# redis-rb 4.8 warns about every BRPOP and SADD Sidekiq 6.4 sends; the warnings say nothing
# about these tests and would bury a failure in the logs. (Sidekiq 7 does not use redis-rb.)
Redis.silence_deprecations = true if defined?(Redis) && Redis.respond_to?(:silence_deprecations=)

module InteropEnv
  # The major version of the Sidekiq loaded: 6, 7 or 8.
  MAJOR = Sidekiq::VERSION.split(".").first.to_i

  def self.redis_options
    opts = {url: ENV.fetch("REDIS_URL") { abort "#{$PROGRAM_NAME}: REDIS_URL is not set" }}
    ns = ENV["REDIS_NAMESPACE"].to_s
    unless ns.empty?
      abort "#{$PROGRAM_NAME}: Sidekiq #{Sidekiq::VERSION} has no namespace option (REDIS_NAMESPACE=#{ns})" if MAJOR >= 7
      opts[:namespace] = ns
    end
    opts
  end

  # Sets a Sidekiq option before the server starts: Sidekiq.options in 6, the default
  # configuration in 7 and 8 (Sidekiq.options is gone).
  def self.set_option(key, value)
    if MAJOR >= 7
      Sidekiq.default_configuration[key] = value
    else
      Sidekiq.options[key] = value
    end
  end
end

# Sidekiq 7 logs to stdout, where the client scripts print what the Go test reads (jids):
# its log goes to stderr, as Sidekiq 6's client logs nothing there.
Sidekiq.default_configuration.logger = Sidekiq::Logger.new($stderr) if InteropEnv::MAJOR >= 7

Sidekiq.configure_client { |config| config.redis = InteropEnv.redis_options }
Sidekiq.configure_server { |config| config.redis = InteropEnv.redis_options }
