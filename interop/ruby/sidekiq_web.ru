# Sidekiq 6.4's Web UI on the test's Redis (sidekiq_env.rb), run by the Go test with
#   rackup sidekiq_web.ru -s webrick -o 127.0.0.1 -p PORT
# The session cookie carries the CSRF token the Quiet and Stop buttons post. Debian strips the
# UI's JavaScript, so every number the tests read is rendered by the server (/stats, /busy, ...).
require "securerandom"
require "rack/session/cookie"
require_relative "sidekiq_env"
require "sidekiq/web"

use Rack::Session::Cookie, secret: SecureRandom.hex(32), same_site: true, max_age: 3600
run Sidekiq::Web
