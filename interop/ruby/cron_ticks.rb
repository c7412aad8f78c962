#!/usr/bin/env ruby
# Asks fugit (the parser sidekiq-cron 1.8 uses) about cron strings, to check exq's parser against
# it. stdin: a JSON array of {"cron": "<string>", "at": <epoch seconds, float>}; prints one JSON
# object per line, in order:
#   {"cron":..,"at":..,"ok":true,"normalized":"<Fugit::Cron#to_cron_s>",
#    "previous":<epoch s>,"next":<epoch s>}
#   {"cron":..,"at":..,"ok":false,"error":"<what Job#valid? reports>"}
# "ok" is sidekiq-cron's own test (Fugit.do_parse must give a Fugit::Cron, so natural language
# such as "every 5 minutes" passes, "5m" does not). "previous" is Fugit::Cron#previous_time(at),
# the tick the poller claims at time "at" (the latest tick <= floor(at) - 1); "next" is
# next_time(at). A cron without a zone is in the zone of this process: TZ, else /etc/localtime.
require "json"
require "fugit"

JSON.parse($stdin.read).each do |q|
  s = q.fetch("cron")
  at = Time.at(q.fetch("at").to_r).utc
  out = {"cron" => s, "at" => q["at"]}
  begin
    c = Fugit.do_parse(s)
    raise "not a cron but a #{c.class}" unless c.is_a?(Fugit::Cron)
    out.merge!("ok" => true, "normalized" => c.to_cron_s,
      "previous" => c.previous_time(at).to_i, "next" => c.next_time(at).to_i)
  rescue => e
    out.merge!("ok" => false, "error" => "#{e.class}: #{e.message}")
  end
  puts JSON.generate(out)
end
