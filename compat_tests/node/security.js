'use strict'
// The security suite of the kafkajs driver (issue #13): the runner's `--security FILE` gives the
// listeners, certificates, users and the OAUTHBEARER token. A round trip row creates P-<kind>
// through the secured listener (kafkajs `ssl`, `sasl: { mechanism }`), produces 20 records and
// consumes them in a group with a commit, read back through the admin listener; a denied row
// (as mallory) passes only on the specific authorization error type.
// kafkajs has no assign(): acl-denied-consume reads the denied topic through an allowed group.
// kafkajs 2.2.4 cannot surface an authorization error of FindCoordinator: BrokerPool.withBroker
// drops every broker's error and the caller throws KafkaJSGroupCoordinatorNotFound. So
// acl-denied-group and acl-denied-txn are NOT_SUPPORTED when that happens, after checking in
// kafkajs's debug log that the broker did answer GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// (anything else is a FAIL).

const fs = require('fs')

module.exports = function securityScenarios ({ Kafka, logLevel, clientOptions, check, ScenarioFailed, NotSupported, args, createTopic, waitForTopic, produce }) {
  let conf = null
  const sec = () => {
    if (!args.security) throw new ScenarioFailed("a security scenario needs --security FILE (the runner's --suite security)")
    if (conf === null) conf = JSON.parse(fs.readFileSync(args.security, 'utf8'))
    return conf
  }

  // One way in: {kafka client, what (for the row's reason), coordinatorErrors (the errors
  // FindCoordinator answered, from kafkajs's debug log)}.
  function way (kind) {
    const s = sec()
    let protocol, sasl, what
    let cert = false
    switch (kind) {
      case 'scram':
        protocol = 'SASL_SSL'
        sasl = { mechanism: 'scram-sha-512', username: s.scram_sha_512.user, password: s.scram_sha_512.password }
        what = `SCRAM-SHA-512 over SASL_SSL as ${sasl.username}`
        break
      case 'plain':
        protocol = 'SASL_PLAINTEXT'
        sasl = { mechanism: 'plain', username: s.plain.user, password: s.plain.password }
        what = `PLAIN over SASL_PLAINTEXT as ${sasl.username}`
        break
      case 'mtls':
        protocol = 'SSL'
        cert = true
        what = 'SSL with the client certificate'
        break
      case 'oauthbearer':
        protocol = 'SASL_PLAINTEXT'
        sasl = { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: s.oauthbearer.token }) }
        what = `OAUTHBEARER (the file's unsecured token, sub=${s.oauthbearer.principal}) over SASL_PLAINTEXT`
        break
      case 'denied': {
        const d = s.denied
        protocol = d.listener
        const mechanism = { PLAIN: 'plain', 'SCRAM-SHA-512': 'scram-sha-512' }[d.mechanism]
        if (!mechanism) throw new ScenarioFailed(`denied.mechanism ${d.mechanism} not handled`)
        sasl = { mechanism, username: d.user, password: d.password }
        what = `${d.mechanism} over ${d.listener} as ${d.user}`
        break
      }
      default:
        throw new Error(`unknown security kind ${kind}`)
    }
    const listener = s.listeners[protocol]
    if (!listener) throw new ScenarioFailed(`security file has no ${protocol} listener`)
    const opts = { ...clientOptions(), brokers: [listener] }
    if (protocol.includes('SSL')) {
      opts.ssl = { ca: [fs.readFileSync(s.ca_pem)] }
      if (cert) Object.assign(opts.ssl, { cert: fs.readFileSync(s.client_cert_pem), key: fs.readFileSync(s.client_key_pem) })
    }
    if (sasl) opts.sasl = sasl
    const coordinatorErrors = []
    if (kind === 'denied') {
      const stderr = opts.logCreator
      opts.logLevel = logLevel.DEBUG
      opts.logCreator = level => entry => {
        if (entry.log.message === 'Tried to find group coordinator' && entry.log.error) coordinatorErrors.push(entry.log.error)
        if (process.env.KAFKAJS_LOG === 'debug') stderr(level)(entry)
      }
    }
    return { kafka: new Kafka(opts), what, coordinatorErrors }
  }

  // The error of `type` in e's chain (kafkajs wraps protocol errors in retry errors), or null.
  function find (e, type) {
    for (let i = 0; e && i < 10; i++) {
      if (e.type === type) return e
      if (Array.isArray(e.errors)) for (const x of e.errors) { const f = find(x, type); if (f) return f }
      e = e.originalError || e.cause
    }
    return null
  }
  const seen = e => e ? `${e.name}${e.type ? ' ' + e.type : ''}: ${e.message}` : 'no error'

  // The client did not surface `type`: NOT_SUPPORTED if that is kafkajs's FindCoordinator gap
  // and the broker's answer was `type`, else FAIL with what was seen.
  function coordinatorGap (err, coordinatorErrors, type, fail) {
    const answered = coordinatorErrors.find(e => e.type === type)
    if (err && err.name === 'KafkaJSGroupCoordinatorNotFound' && answered) {
      throw new NotSupported(`kafkajs ${require('kafkajs/package.json').version} does not surface ${type}: its BrokerPool.withBroker ` +
        `drops FindCoordinator's error and it reports ${err.name} (the broker's ${type} "${answered.message}" is only in its debug log)`)
    }
    throw new ScenarioFailed(`${fail}: want ${type}, saw ${seen(err)}` +
      (coordinatorErrors.length ? `; FindCoordinator answered ${coordinatorErrors.map(e => e.type || e.message).join(', ')}` : ''))
  }

  const secTopic = (kind) => `${args['topic-prefix']}-${kind}`
  const deniedName = (what) => `${sec().denied.prefix}${args['topic-prefix']}-${what}`

  async function endOffset (ctx, t) {
    const a = await ctx.admin()
    const [o] = await a.fetchTopicOffsets(t)
    return o.high
  }

  function roundTrip (kind) {
    return async ctx => {
      const { kafka, what } = way(kind)
      const t = secTopic(kind)
      const g = `${t}-g`
      const a = kafka.admin()
      ctx.cleanups.push(() => a.disconnect())
      await a.connect()
      check(await a.createTopics({ topics: [{ topic: t, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: false, timeout: 15000 }),
        `topic ${t} not created`)
      await waitForTopic(ctx, a, t, 1)
      const want = [...Array(20).keys()].map(i => `${kind}-${String(i).padStart(2, '0')}`)
      const p = kafka.producer({ allowAutoTopicCreation: false })
      ctx.cleanups.push(() => p.disconnect())
      await p.connect()
      await p.send({ topic: t, acks: -1, messages: want.map(value => ({ value })) })
      await p.disconnect()
      const c = kafka.consumer({ groupId: g, sessionTimeout: 10000, heartbeatInterval: 500, rebalanceTimeout: 10000 })
      ctx.cleanups.push(() => c.disconnect())
      const got = []
      await c.connect()
      await c.subscribe({ topics: [t], fromBeginning: true })
      await c.run({ autoCommit: false, eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
      await ctx.waitFor(`20 records in group ${g} (have ${got.length})`, () => got.length >= 20)
      await c.commitOffsets([{ topic: t, partition: 0, offset: '20' }])
      await c.disconnect()
      check(JSON.stringify(got) === JSON.stringify(want), `consumed ${got.length} records, not the 20 produced in order: ${got}`)
      const adm = await ctx.admin()
      const offs = await adm.fetchOffsets({ groupId: g, topics: [t] })
      const committed = offs[0].partitions.find(x => x.partition === 0)
      check(committed && committed.offset === '20', `group ${g} committed ${JSON.stringify(offs)}, want offset 20`)
      return `${what}: topic created, 20 produced, 20 consumed in a group, offset 20 committed`
    }
  }

  async function deniedProduce (ctx) {
    const { kafka, what } = way('denied')
    const t = deniedName('produce')
    await createTopic(ctx, t, 1)
    const p = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 2, initialRetryTime: 100 } })
    ctx.cleanups.push(() => p.disconnect())
    let err = null
    try {
      await p.connect()
      await p.send({ topic: t, acks: -1, messages: [{ value: 'must-not-land' }] })
    } catch (e) {
      err = e
    }
    const hit = find(err, 'TOPIC_AUTHORIZATION_FAILED')
    check(hit, `produce, ${what}: want TOPIC_AUTHORIZATION_FAILED, saw ${err ? seen(err) : 'the send succeeded'}`)
    const end = await endOffset(ctx, t)
    check(end === '0', `TOPIC_AUTHORIZATION_FAILED seen, but ${t} ends at offset ${end}, want 0 (empty)`)
    return `TOPIC_AUTHORIZATION_FAILED seen (${hit.message}); ${t} still empty (end offset 0)`
  }

  // Runs a group consumer of `topic` as `kafka` until it reports an error (connect, subscribe,
  // or the run's crash event) or the scenario's time is nearly over (null: never a pass).
  async function consumeUntilError (ctx, kafka, groupId, topic, got) {
    const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500, rebalanceTimeout: 10000, retry: { retries: 2, initialRetryTime: 100, restartOnFailure: async () => false } })
    ctx.cleanups.push(() => c.disconnect())
    let err = null
    c.on(c.events.CRASH, ({ payload }) => { if (!err) err = payload.error })
    try {
      await c.connect()
      await c.subscribe({ topics: [topic], fromBeginning: true })
      await c.run({ autoCommit: false, eachMessage: async ({ message }) => { got.push(message) } })
    } catch (e) {
      err = e
    }
    const until = ctx.deadline - 2000
    while (!err && Date.now() < until) await new Promise(resolve => setTimeout(resolve, 100))
    return err
  }

  async function deniedConsume (ctx) {
    const { kafka, what } = way('denied')
    const t = deniedName('consume')
    await createTopic(ctx, t, 1)
    await produce(ctx, t, [{ value: 'admin-record' }])
    const got = []
    // An allowed group (not the denied prefix): only the topic is denied.
    const err = await consumeUntilError(ctx, kafka, `${args['topic-prefix']}-consume-g`, t, got)
    check(got.length === 0, `${got.length} record(s) delivered, ${what}`)
    const hit = find(err, 'TOPIC_AUTHORIZATION_FAILED')
    check(hit, `consume ${t} in an allowed group, ${what}: want TOPIC_AUTHORIZATION_FAILED, saw ${seen(err)}`)
    return `TOPIC_AUTHORIZATION_FAILED seen (${hit.message}); no record delivered (kafkajs has no assign(): read in an allowed group)`
  }

  async function deniedGroup (ctx) {
    const { kafka, what, coordinatorErrors } = way('denied')
    const t = secTopic('grp')
    const g = deniedName('group')
    await createTopic(ctx, t, 1)
    await produce(ctx, t, [{ value: 'admin-record' }])
    const got = []
    const err = await consumeUntilError(ctx, kafka, g, t, got)
    check(got.length === 0, `${got.length} record(s) delivered in the denied group`)
    const hit = find(err, 'GROUP_AUTHORIZATION_FAILED')
    if (!hit) coordinatorGap(err, coordinatorErrors, 'GROUP_AUTHORIZATION_FAILED', `consume in group ${g}, ${what}`)
    return `GROUP_AUTHORIZATION_FAILED seen (${hit.message})`
  }

  async function deniedTxn (ctx) {
    const { kafka, what, coordinatorErrors } = way('denied')
    const id = deniedName('txn')
    const p = kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, retry: { retries: 2, initialRetryTime: 100 } })
    ctx.cleanups.push(() => p.disconnect())
    let err = null
    try {
      await p.connect()
      // The first transaction() runs InitProducerId with the transactional id.
      const txn = await p.transaction()
      await txn.abort()
    } catch (e) {
      err = e
    }
    const hit = find(err, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED')
    check(err, `init of transactional id ${id}, ${what}: want TRANSACTIONAL_ID_AUTHORIZATION_FAILED, saw it succeed`)
    if (!hit) coordinatorGap(err, coordinatorErrors, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', `init of transactional id ${id}, ${what}`)
    return `TRANSACTIONAL_ID_AUTHORIZATION_FAILED seen (${hit.message})`
  }

  // quota-throttle: the runner set producer_byte_rate for this driver's client id. kafkajs has
  // no throttle event or metric; its request queue logs each throttle it honours ("Client side
  // throttling in effect for N ms", debug level) through the client's logCreator, which is
  // where this row reads it (as the denied rows read FindCoordinator's errors).
  async function quotaThrottle (ctx) {
    const s = sec()
    const throttles = []
    const stderr = clientOptions().logCreator
    const opts = {
      ...clientOptions(),
      brokers: [s.listeners.SASL_PLAINTEXT],
      clientId: s.quota.client_ids.kafkajs,
      sasl: { mechanism: 'plain', username: s.plain.user, password: s.plain.password },
      logLevel: logLevel.DEBUG,
      logCreator: level => entry => {
        const m = /^Client side throttling in effect for (\d+)ms/.exec(entry.log.message || '')
        if (m) throttles.push(Number(m[1]))
        if (process.env.KAFKAJS_LOG === 'debug' && stderr) stderr(level)(entry)
      }
    }
    const kafka = new Kafka(opts)
    const t = secTopic('quota')
    await createTopic(ctx, t, 1)
    const p = kafka.producer({ allowAutoTopicCreation: false })
    ctx.cleanups.push(() => p.disconnect())
    await p.connect()
    const count = 400
    const size = 1024
    const start = Date.now()
    // 16 records (16 KiB) a request, one after the other: many Produce requests, so the
    // throttle the first answers carry delays the later ones.
    for (let i = 0; i < count; i += 16) {
      const messages = [...Array(Math.min(16, count - i)).keys()].map(() => ({ value: Buffer.alloc(size) }))
      await p.send({ topic: t, acks: -1, messages })
    }
    const elapsed = (Date.now() - start) / 1000
    const rate = count * size / elapsed
    const quota = s.quota.producer_byte_rate
    const peak = Math.max(0, ...throttles)
    check(peak > 0, `no "Client side throttling" log line in ${elapsed.toFixed(1)} s (${rate.toFixed(0)} B/s, quota ${quota})`)
    check(rate < 3 * quota, `${rate.toFixed(0)} B/s over ${elapsed.toFixed(1)} s, not under 3 x the quota ${quota}`)
    return `${count} x ${size} B acknowledged in ${elapsed.toFixed(1)} s (${rate.toFixed(0)} B/s, quota ${quota}); ` +
      `client-side throttling logged ${throttles.length} times, max ${peak} ms`
  }

  return {
    'quota-throttle': quotaThrottle,
    'sasl-scram-sha-512': roundTrip('scram'),
    'sasl-plain': roundTrip('plain'),
    mtls: roundTrip('mtls'),
    'sasl-oauthbearer': roundTrip('oauthbearer'),
    'acl-denied-produce': deniedProduce,
    'acl-denied-consume': deniedConsume,
    'acl-denied-group': deniedGroup,
    'acl-denied-txn': deniedTxn
  }
}
