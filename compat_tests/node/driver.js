'use strict'
// The kafkajs driver of the compatibility matrix. `node driver.js --bootstrap HOST:PORT
// --scenario a,b --topic-prefix P --timeout S [--security FILE]` prints one JSON line per
// scenario (--security: the security suite, see security.js). Every
// scenario races a timer: a hung one becomes FAIL "timeout" and the run goes on; the process
// exits at the end whatever is still pending.
//
// kafkajs has no partition-assignment consumer: every read goes through a consumer group
// (a fresh group per read, from the beginning), so reads need the group coordinator.
// kafkajs ships GZIP only; snappy and lz4 come from the kafkajs-snappy and lz4-kafkajs codec
// packages (pure JS); no zstd codec installs here (see zstd below).

const crypto = require('crypto')
const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = require('kafkajs')
const kafkajsVersion = require('kafkajs/package.json').version

CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
CompressionCodecs[CompressionTypes.LZ4] = new (require('lz4-kafkajs'))().codec

class ScenarioFailed extends Error {}
class NotSupported extends Error {}

function check (cond, msg) { if (!cond) throw new ScenarioFailed(msg) }

function parseArgs (argv) {
  const a = { scenario: 'all', timeout: '45', 'topic-prefix': 'js' + crypto.randomBytes(3).toString('hex') }
  for (let i = 2; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--/, '')] = argv[i + 1]
  return a
}

const args = parseArgs(process.argv)
const TIMEOUT_MS = parseFloat(args.timeout) * 1000
const suffix = () => crypto.randomBytes(3).toString('hex')

// The client options of every Kafka instance; the security rows add brokers, ssl and sasl.
function clientOptions () {
  return {
    clientId: 'odradek-compat-kafkajs',
    brokers: [args.bootstrap],
    // KAFKAJS_LOG=debug: kafkajs's own log on stderr (stdout carries the driver's results)
    logLevel: process.env.KAFKAJS_LOG === 'debug' ? logLevel.DEBUG : logLevel.NOTHING,
    logCreator: () => ({ namespace, label, log }) => process.stderr.write(`${label} ${namespace} ${JSON.stringify(log)}\n`),
    connectionTimeout: 10000,
    requestTimeout: 20000,
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 }
  }
}

class Ctx {
  constructor (scenario) {
    this.scenario = scenario
    this.deadline = Date.now() + TIMEOUT_MS
    this.cleanups = []
    this.kafka = new Kafka(clientOptions())
  }

  topic (name = '') { return `${args['topic-prefix']}-${this.scenario}${name ? '-' + name : ''}-${suffix()}` }
  group () { return `${args['topic-prefix']}-${this.scenario}-g-${suffix()}` }
  txnId () { return `${args['topic-prefix']}-${this.scenario}-tx-${suffix()}` }

  async waitFor (what, cond) {
    let last = null
    for (;;) {
      try {
        if (await cond()) return
      } catch (e) {
        if (e instanceof ScenarioFailed) throw e
        last = e
      }
      if (Date.now() > this.deadline) throw new ScenarioFailed(`timed out waiting for ${what}` + (last ? ` (last error: ${last.message})` : ''))
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  }

  async admin () {
    const a = this.kafka.admin()
    await a.connect()
    this.cleanups.push(() => a.disconnect())
    return a
  }

  async producer (opts = {}) {
    const p = this.kafka.producer({ allowAutoTopicCreation: false, ...opts })
    await p.connect()
    this.cleanups.push(() => p.disconnect())
    return p
  }

  consumer (opts) {
    const c = this.kafka.consumer({ sessionTimeout: 10000, heartbeatInterval: 500, rebalanceTimeout: 10000, ...opts })
    this.cleanups.push(() => c.disconnect())
    return c
  }

  async close () {
    for (const f of this.cleanups.reverse()) {
      try { await f() } catch (e) { /* closing is best effort */ }
    }
  }
}

// kafkajs's `waitForLeaders` retries only LEADER_NOT_AVAILABLE, but a KRaft broker answers
// Metadata for a topic it has just created UNKNOWN_TOPIC_OR_PARTITION until the controller's
// record reaches its metadata cache (Kafka 4.4 under load: kafkajs then fails at once). So
// the driver waits itself: leaders in Metadata, then ListOffsets answered by the partitions.
async function waitForTopic (ctx, a, topic, numPartitions) {
  await ctx.waitFor(`partitions of ${topic} served`, async () => {
    const { topics } = await a.fetchTopicMetadata({ topics: [topic] })
    if (topics[0].partitions.length !== numPartitions || topics[0].partitions.some(p => p.leader < 0)) return false
    return (await a.fetchTopicOffsets(topic)).length === numPartitions
  })
}

async function createTopic (ctx, topic, numPartitions, configs = {}) {
  const a = await ctx.admin()
  const created = await a.createTopics({
    topics: [{ topic, numPartitions, replicationFactor: 1, configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
    waitForLeaders: false, // kafkajs's default is true; see waitForTopic
    timeout: 15000
  })
  check(created, `topic ${topic} not created`)
  await waitForTopic(ctx, a, topic, numPartitions)
}

async function produce (ctx, topic, messages, opts = {}, sendOpts = {}) {
  const p = await ctx.producer(opts)
  await p.send({ topic, acks: -1, messages, ...sendOpts })
  await p.disconnect()
}

// Reads `count` records of `topic` through a fresh group from the beginning.
async function readAll (ctx, topic, count, opts = {}) {
  const c = ctx.consumer({ groupId: ctx.group(), ...opts })
  const got = []
  await c.connect()
  await c.subscribe({ topics: [topic], fromBeginning: true })
  await c.run({ autoCommit: false, eachMessage: async ({ partition, message }) => { got.push({ partition, ...message }) } })
  await ctx.waitFor(`${count} records (have ${got.length})`, () => got.length >= count)
  await c.disconnect()
  return got
}

const str = b => (b === null || b === undefined) ? null : b.toString()
const values = rs => rs.map(r => str(r.value))

// ---------------------------------------------------------------- scenarios

async function produceConsume (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 3)
  const sent = []
  for (let i = 0; i < 30; i++) sent.push({ key: `k${i % 10}`, value: `v${String(i).padStart(3, '0')}` })
  await produce(ctx, t, sent)
  const got = await readAll(ctx, t, 30)
  check(got.length === 30, `read ${got.length} records, produced 30`)
  const partOf = {}
  const byPart = {}
  for (const r of got) {
    const k = str(r.key)
    check(partOf[k] === undefined || partOf[k] === r.partition, `key ${k} in two partitions`)
    partOf[k] = r.partition;
    (byPart[r.partition] = byPart[r.partition] || []).push(r)
  }
  check(Object.keys(byPart).length > 1, 'all keys landed in one partition')
  for (const rs of Object.values(byPart)) {
    const vs = values(rs)
    check(JSON.stringify(vs) === JSON.stringify([...vs].sort()), `partition not in produce order: ${vs}`)
  }
  check(new Set(values(got)).size === 30, 'duplicates or losses')
  return 'reads through consumer groups (kafkajs has no assign())'
}

function compressibleValues () {
  const out = []
  for (let i = 0; i < 50; i++) out.push(`record-${String(i).padStart(4, '0')}-` + 'abcdefgh'.repeat(64))
  return out
}

function compression (type, name) {
  return async ctx => {
    if (type === null) {
      throw new NotSupported('kafkajs has no zstd codec; the @kafkajs/zstd plugin needs a native build (cppzst) that fails here')
    }
    const t = ctx.topic()
    await createTopic(ctx, t, 1)
    const vals = compressibleValues()
    await produce(ctx, t, vals.map(value => ({ value })), {}, { compression: type })
    const got = await readAll(ctx, t, vals.length)
    check(JSON.stringify(values(got)) === JSON.stringify(vals), 'values differ after the round trip')
    check(got.every((r, i) => r.offset === String(i)), 'offsets not 0..n-1')
    return name === 'gzip' ? '' : `codec from the ${name === 'snappy' ? 'kafkajs-snappy' : 'lz4-kafkajs'} package`
  }
}

async function headersAndNulls (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 1)
  await produce(ctx, t, [
    { key: null, value: 'v-null-key', headers: { h: ['1', '2'], empty: '' } },
    { key: 'k-tombstone', value: null },
    { key: Buffer.alloc(0), value: Buffer.alloc(0) }
  ])
  const got = await readAll(ctx, t, 3)
  const kv = got.map(r => `${str(r.key)}/${str(r.value)}`)
  check(JSON.stringify(kv) === JSON.stringify(['null/v-null-key', 'k-tombstone/null', '/']), `keys/values differ: ${kv}`)
  const h = got[0].headers
  check(Array.isArray(h.h) && h.h.map(str).join(',') === '1,2' && str(h.empty) === '', `headers differ: ${JSON.stringify(h)}`)
  check(Object.keys(got[1].headers).length === 0 && Object.keys(got[2].headers).length === 0, 'unexpected headers')
  return 'no null header value: kafkajs headers are strings or buffers'
}

async function largeMessage (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 1, { 'max.message.bytes': '4194304' })
  const v = Buffer.alloc(2 * 1024 * 1024)
  for (let i = 0; i < v.length; i++) v[i] = (i * 7 + 3) % 251
  await produce(ctx, t, [{ value: v }])
  const got = await readAll(ctx, t, 1)
  check(Buffer.compare(got[0].value, v) === 0, 'value differs')
  return ''
}

async function listOffsets (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 1)
  const t0 = Date.now() - 60000
  await produce(ctx, t, [0, 1, 2].map(i => ({ value: `r${i}`, timestamp: String(t0 + 1000 * i) })))
  const a = await ctx.admin()
  const [o] = await a.fetchTopicOffsets(t)
  check(o.low === '0', `earliest ${o.low} != 0`)
  check(o.high === '3', `latest ${o.high} != 3`)
  const byTime = async ms => (await a.fetchTopicOffsetsByTimestamp(t, ms))[0].offset
  check(await byTime(t0 + 500) === '1', 'by time T+500 != 1')
  check(await byTime(t0 + 1000) === '1', 'by time T+1000 != 1')
  const after = await byTime(t0 + 10000)
  check(after === '-1' || after === '3', `by time after the last record: ${after}`)
  return after === '3' ? 'kafkajs lists a time after the last record as the high watermark (its mapping of -1)' : ''
}

async function adminTopics (ctx) {
  const a = await ctx.admin()
  const t = ctx.topic()
  check(await a.createTopics({ topics: [{ topic: t, numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] }], waitForLeaders: false }), 'create failed')
  await waitForTopic(ctx, a, t, 2)
  // kafkajs answers false (not an error) when TOPIC_ALREADY_EXISTS comes back.
  check(await a.createTopics({ topics: [{ topic: t, numPartitions: 2, replicationFactor: 1 }] }) === false, 'creating an existing topic was not refused')
  const partitions = async () => {
    const md = await a.fetchTopicMetadata({ topics: [t] })
    return md.topics[0].partitions.filter(p => p.leader >= 0).length
  }
  await ctx.waitFor('2 partitions with leaders', async () => await partitions() === 2)
  const retention = async () => {
    const r = await a.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: t, configNames: ['retention.ms'] }], includeSynonyms: false })
    const e = r.resources[0].configEntries.find(x => x.configName === 'retention.ms')
    return e && e.configValue
  }
  check(await retention() === '3600000', `retention.ms = ${await retention()}`)
  // kafkajs 2.2.4 has only the legacy AlterConfigs (no incremental API).
  await a.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: t, configEntries: [{ name: 'retention.ms', value: '7200000' }] }] })
  await ctx.waitFor('altered retention.ms', async () => await retention() === '7200000')
  await a.createPartitions({ topicPartitions: [{ topic: t, count: 4 }] })
  await ctx.waitFor('4 partitions', async () => await partitions() === 4)
  let rejected = null
  try {
    await a.createPartitions({ topicPartitions: [{ topic: t, count: 3 }] })
  } catch (e) {
    rejected = e
  }
  check(rejected !== null, 'decreasing partitions succeeded')
  const type = rejected.type || (rejected.errors && rejected.errors[0] && rejected.errors[0].type) || String(rejected)
  check(String(type).includes('INVALID_PARTITIONS') || String(rejected.message).toLowerCase().includes('partition'), `decrease: ${type} ${rejected.message}`)
  await a.deleteTopics({ topics: [t], timeout: 15000 })
  await ctx.waitFor('topic gone', async () => !(await a.listTopics()).includes(t))
  return 'legacy AlterConfigs (kafkajs has no incremental alter)'
}

// A group member: tracks its assignment from GROUP_JOIN events and its records.
function member (ctx, groupId, topic, extra = {}) {
  const c = ctx.consumer({ groupId, ...extra })
  const m = { c, own: new Set(), recs: [] }
  c.on(c.events.GROUP_JOIN, e => { m.own = new Set((e.payload.memberAssignment[topic] || []).map(Number)) })
  m.start = async () => {
    await c.connect()
    await c.subscribe({ topics: [topic], fromBeginning: true })
    await c.run({ autoCommit: false, eachMessage: async ({ partition, message }) => { m.recs.push({ partition, ...message }) } })
  }
  m.commit = async () => {
    const last = {}
    for (const r of m.recs) last[r.partition] = Math.max(last[r.partition] ?? -1, Number(r.offset))
    const offsets = Object.entries(last).filter(([p]) => m.own.has(Number(p))).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o + 1) }))
    if (offsets.length) await c.commitOffsets(offsets)
  }
  return m
}

async function consumerGroup (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 4)
  const g = ctx.group()
  const a = member(ctx, g, t)
  await a.start()
  await ctx.waitFor('A owns all 4 partitions', () => a.own.size === 4)
  const b = member(ctx, g, t)
  await b.start()
  await ctx.waitFor('A and B 2+2', () => a.own.size === 2 && b.own.size === 2 && new Set([...a.own, ...b.own]).size === 4)
  const pa = new Set(a.own)
  const pb = new Set(b.own)
  const msgs = []
  for (let p = 0; p < 4; p++) for (let i = 0; i < 10; i++) msgs.push({ partition: p, value: `p${p}-${i}` })
  await produce(ctx, t, msgs)
  await ctx.waitFor('40 records', () => a.recs.length + b.recs.length >= 40)
  check(a.recs.length + b.recs.length === 40, 'duplicates')
  check(a.recs.every(r => pa.has(r.partition)) && b.recs.every(r => pb.has(r.partition)), 'record from a partition the member does not own')
  await a.commit()
  await b.commit()
  await b.c.disconnect()
  a.recs = []
  await ctx.waitFor('A owns all 4 after B left', () => a.own.size === 4)
  const want = []
  const more = []
  for (let p = 0; p < 4; p++) for (let i = 0; i < 2; i++) { more.push({ partition: p, value: `p${p}-x${i}` }); want.push(`p${p}-x${i}`) }
  await produce(ctx, t, more)
  await ctx.waitFor('8 new records on A', () => a.recs.length >= 8)
  check(JSON.stringify(values(a.recs).sort()) === JSON.stringify(want.sort()), `A did not resume at the commits: ${values(a.recs)}`)
  await a.commit()
  await a.c.disconnect()
  const last = []
  for (let p = 0; p < 4; p++) last.push({ partition: p, value: `p${p}-y` })
  await produce(ctx, t, last)
  const c = member(ctx, g, t)
  await c.start()
  await ctx.waitFor('4 records on C', () => c.recs.length >= 4)
  check(JSON.stringify(values(c.recs).sort()) === JSON.stringify(last.map(m => m.value).sort()), `C did not resume at A's commits: ${values(c.recs)}`)
  const adm = await ctx.admin()
  const offs = await adm.fetchOffsets({ groupId: g, topics: [t] })
  const committed = offs[0].partitions.sort((x, y) => x.partition - y.partition).map(p => p.offset)
  check(JSON.stringify(committed) === JSON.stringify(['12', '12', '12', '12']), `committed ${committed}`)
  return ''
}

async function idempotent (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 1)
  const vals = []
  for (let i = 0; i < 100; i++) vals.push(`i${String(i).padStart(3, '0')}`)
  await produce(ctx, t, vals.map(value => ({ value })), { idempotent: true, maxInFlightRequests: 1 })
  const got = await readAll(ctx, t, 100)
  check(got.every((r, i) => r.offset === String(i)), 'offsets not contiguous 0..99')
  check(JSON.stringify(values(got)) === JSON.stringify(vals), 'values duplicated, lost or reordered')
  return ''
}

async function txProducer (ctx, transactionalId) {
  return ctx.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60000 })
}

async function transactions (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 1)
  const p = await txProducer(ctx, ctx.txnId())
  const committed = []
  const all = []
  for (const tag of ['c1', 'a', 'c2']) {
    const txn = await p.transaction()
    const msgs = [0, 1, 2, 3, 4].map(i => ({ value: `${tag}-${i}` }))
    await txn.send({ topic: t, acks: -1, messages: msgs })
    for (const m of msgs) { all.push(m.value); if (tag !== 'a') committed.push(m.value) }
    if (tag === 'a') await txn.abort(); else await txn.commit()
  }
  const rc = await readAll(ctx, t, 10, { readUncommitted: false })
  check(JSON.stringify(values(rc)) === JSON.stringify(committed), `read_committed saw ${values(rc)}`)
  const ru = await readAll(ctx, t, 15, { readUncommitted: true })
  check(JSON.stringify(values(ru)) === JSON.stringify(all), `read_uncommitted saw ${values(ru)}`)
  return ''
}

async function consumeTransformProduce (ctx) {
  const src = ctx.topic('in')
  const dst = ctx.topic('out')
  await createTopic(ctx, src, 1)
  await createTopic(ctx, dst, 1)
  const g = ctx.group()
  await produce(ctx, src, [...Array(10).keys()].map(i => ({ value: `in-${i}` })))
  const m = member(ctx, g, src, { readUncommitted: false })
  await m.start()
  const p = await txProducer(ctx, ctx.txnId())
  const adm = await ctx.admin()
  const committedAt = async () => {
    const offs = await adm.fetchOffsets({ groupId: g, topics: [src] })
    return offs[0].partitions[0].offset
  }
  const process = async (from, n, commit) => {
    await ctx.waitFor(`${n} inputs`, () => m.recs.length >= from + n)
    const inputs = m.recs.slice(from)
    check(inputs.length === n, `read ${inputs.length} inputs, expected ${n}`)
    const txn = await p.transaction()
    await txn.send({ topic: dst, acks: -1, messages: inputs.map(r => ({ value: str(r.value).toUpperCase() })) })
    await txn.sendOffsets({ consumerGroupId: g, topics: [{ topic: src, partitions: [{ partition: 0, offset: String(Number(inputs[n - 1].offset) + 1) }] }] })
    if (commit) await txn.commit(); else await txn.abort()
  }
  await process(0, 10, true)
  await ctx.waitFor('committed offset 10 after the commit', async () => await committedAt() === '10')
  await produce(ctx, src, [10, 11, 12, 13, 14].map(i => ({ value: `in-${i}` })))
  await process(10, 5, false)
  const after = await committedAt()
  check(after === '10', `committed offset ${after} after the aborted transaction`)
  const out = await readAll(ctx, dst, 10, { readUncommitted: false })
  check(JSON.stringify(values(out)) === JSON.stringify([...Array(10).keys()].map(i => `IN-${i}`)), `outputs ${values(out)}`)
  const [o] = await adm.fetchTopicOffsets(dst)
  check(o.high === '17', `output end offset ${o.high}, expected 17 (10 + marker + 5 + marker)`)
  return 'transaction.sendOffsets'
}

async function fencing (ctx) {
  const t = ctx.topic()
  await createTopic(ctx, t, 1)
  const id = ctx.txnId()
  const p1 = await txProducer(ctx, id)
  const txn1 = await p1.transaction()
  await txn1.send({ topic: t, acks: -1, messages: [{ value: 'from-p1' }] })
  const p2 = await txProducer(ctx, id)
  const txn2 = await p2.transaction() // the first transaction() runs InitProducerId: fences p1
  let err = null
  try {
    await txn1.commit()
  } catch (e) {
    err = e
  }
  check(err !== null, 'the fenced producer committed')
  const what = `${err.type || ''} ${err.message}`
  check(/FENCED|EPOCH|fenced|epoch/.test(what), `unexpected error for the fenced producer: ${what}`)
  await txn2.send({ topic: t, acks: -1, messages: [{ value: 'from-p2' }] })
  await txn2.commit()
  const got = await readAll(ctx, t, 1, { readUncommitted: false })
  check(JSON.stringify(values(got)) === JSON.stringify(['from-p2']), `read_committed saw ${values(got)}`)
  return ''
}

const SCENARIOS = {
  'produce-consume': produceConsume,
  'compression-gzip': compression(CompressionTypes.GZIP, 'gzip'),
  'compression-snappy': compression(CompressionTypes.Snappy, 'snappy'),
  'compression-lz4': compression(CompressionTypes.LZ4, 'lz4'),
  'compression-zstd': compression(null, 'zstd'),
  'headers-and-nulls': headersAndNulls,
  'large-message': largeMessage,
  'list-offsets': listOffsets,
  'admin-topics': adminTopics,
  'consumer-group': consumerGroup,
  'idempotent-producer': idempotent,
  transactions,
  'consume-transform-produce': consumeTransformProduce,
  fencing,
  ...require('./security')({ Kafka, logLevel, clientOptions, check, ScenarioFailed, NotSupported, args, createTopic, waitForTopic, produce }),
  ...require('./cluster')({ Kafka, clientOptions, check, ScenarioFailed }) // run.py --suite cluster
}

function emit (scenario, status, reason) {
  process.stdout.write(JSON.stringify({ client: 'kafkajs', client_version: kafkajsVersion, scenario, status, reason: reason || '' }) + '\n')
}

async function main () {
  if (!args.bootstrap) {
    process.stderr.write('usage: node driver.js --bootstrap HOST:PORT [--scenario a,b] [--topic-prefix P] [--timeout S] [--security FILE]\n')
    process.exit(2)
  }
  let names = []
  for (const s of args.scenario.split(',')) names = names.concat(s === 'all' ? Object.keys(SCENARIOS) : [s])
  for (const name of names) {
    const fn = SCENARIOS[name]
    if (!fn) { emit(name, 'FAIL', 'unknown scenario'); continue }
    const ctx = new Ctx(name)
    let timer
    const timeout = new Promise(resolve => { timer = setTimeout(() => resolve({ status: 'FAIL', reason: 'timeout' }), TIMEOUT_MS + 10000) })
    const run = fn(ctx).then(
      note => ({ status: 'PASS', reason: note }),
      e => e instanceof NotSupported ? { status: 'NOT_SUPPORTED', reason: e.message }
        : { status: 'FAIL', reason: e instanceof ScenarioFailed ? e.message : `${e.name}: ${e.message}` })
    const r = await Promise.race([run, timeout])
    clearTimeout(timer)
    emit(name, r.status, r.reason)
    // Closing is bounded too: a client stuck in disconnect must not hold the run.
    await Promise.race([ctx.close(), new Promise(resolve => setTimeout(resolve, 5000))])
  }
  process.exit(0)
}

// Errors that escape a scenario's promise chain (client internals) must not end the run.
process.on('unhandledRejection', () => {})
main()
