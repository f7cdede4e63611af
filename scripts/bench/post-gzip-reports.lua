-- wrk script for scripts/bench-serve.sh: POSTs real gzip reports to /api/v1/reports, every
-- one distinct. The gzip body is the report compressed once (a deflate stream ended with a
-- sync flush, written by bench-serve.sh) plus a final stored block of trailing JSON
-- whitespace that spells a per-request counter in spaces and tabs, so each report has its own
-- digest and is stored, not answered as a duplicate. The CRC-32 is carried on from the
-- report's, so each body is a valid gzip file of a valid report.
local bit = require("bit")

local prefix, crcPrefix, lenPrefix
local token = os.getenv("BENCH_TOKEN")
local counter = 0
accepted = 0
other = 0

local crcTable = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit.band(c, 1) == 1 then c = bit.bxor(bit.rshift(c, 1), 0xEDB88320) else c = bit.rshift(c, 1) end
  end
  crcTable[i] = c
end

local function crc32(crc, s)
  crc = bit.bnot(crc)
  for i = 1, #s do
    crc = bit.bxor(crcTable[bit.band(bit.bxor(crc, s:byte(i)), 0xff)], bit.rshift(crc, 8))
  end
  return bit.bnot(crc)
end

local function le32(x)
  return string.char(bit.band(x, 0xff), bit.band(bit.rshift(x, 8), 0xff), bit.band(bit.rshift(x, 16), 0xff),
    bit.band(bit.rshift(x, 24), 0xff))
end

local threads = {}
function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local f = assert(io.open(os.getenv("BENCH_PREFIX"), "rb"))
  prefix = f:read("*a")
  f:close()
  crcPrefix = tonumber(os.getenv("BENCH_PREFIX_CRC"))
  lenPrefix = tonumber(os.getenv("BENCH_PREFIX_LEN"))
  wrk.method = "POST"
  wrk.headers["Content-Encoding"] = "gzip"
  wrk.headers["Authorization"] = "Bearer " .. token
end

function request()
  counter = counter + 1
  local n = (thread_id or 0) * 16777216 + counter
  local chars = {}
  for i = 1, 32 do
    chars[i] = (n % 2 == 1) and "\t" or " "
    n = math.floor(n / 2)
  end
  local suffix = table.concat(chars) .. "\n"
  local len = #suffix
  local block = string.char(1, len % 256, math.floor(len / 256), 255 - len % 256, 255 - math.floor(len / 256)) .. suffix
  local body = prefix .. block .. le32(crc32(crcPrefix, suffix)) .. le32(lenPrefix + len)
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  if status == 202 then accepted = accepted + 1 else other = other + 1 end
end

function done(summary, latency, requests)
  local ok, bad = 0, 0
  for _, t in ipairs(threads) do
    ok = ok + t:get("accepted")
    bad = bad + t:get("other")
  end
  local seconds = summary.duration / 1e6
  io.write(string.format("accepted: %d reports in %.1f s = %.0f reports/s (other answers: %d, socket errors: %d)\n",
    ok, seconds, ok / seconds, bad, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("latency: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
