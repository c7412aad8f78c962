# Sidekiq 6.4's Web UI with sidekiq-cron 1.8's extension (the "Cron" tab: /cron, /cron/NAME and
# the POST forms /cron/NAME/{enque,disable,enable,delete}) on the test's Redis (sidekiq_env.rb),
# run by the Go test like sidekiq_web.ru:
#   rackup cron_web.ru -s webrick -o 127.0.0.1 -p PORT
# It answers /stats (Sidekiq's) and /cron once it is up. Every form carries a one-time
# authenticity_token tied to the session cookie: Sidekiq::Web::CsrfProtection replaces the
# session's token after each accepted POST, so a test GETs the page again (keeping the cookie
# jar) before each post. NAME in a path is CGI.escape'd with "+" as "%20", as the pages write it.
require "securerandom"
require "rack/session/cookie"
require_relative "sidekiq_env"
require "sidekiq/web"
require "sidekiq/cron/web" # registers Sidekiq::Cron::WebExtension and the "Cron" tab

use Rack::Session::Cookie, secret: SecureRandom.hex(32), same_site: true, max_age: 3600
run Sidekiq::Web
