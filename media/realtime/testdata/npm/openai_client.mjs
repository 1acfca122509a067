// Drives voiced with the published `openai` package (OpenAIRealtimeWS):
// configure, send text, then speech, and print what came back as JSON.
// Usage: node openai_client.mjs <http base URL> <API key> <format> <raw audio file>
// format: pcm16 (24 kHz PCM16), pcmu or pcma (8 kHz G.711). The class
// always dials wss://, so createConnection hands it a plain TCP socket.
import net from 'node:net';
import fs from 'node:fs';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';

const [base, key, fmtName, audioPath] = process.argv.slice(2);
const u = new URL(base);
const format = { pcm16: { type: 'audio/pcm', rate: 24000 }, pcmu: { type: 'audio/pcmu' }, pcma: { type: 'audio/pcma' } }[fmtName];
const bytesPer100ms = fmtName === 'pcm16' ? 4800 : 800;

const client = new OpenAI({ apiKey: key, baseURL: base + '/v1' });
const rt = new OpenAIRealtimeWS({
  model: 'gpt-realtime',
  options: { createConnection: () => net.connect({ host: u.hostname, port: Number(u.port) }) },
}, client);

const out = { sessionUpdated: false, responses: [], userTranscripts: [], userDeltas: [], transcribedItem: '', lateDeltas: 0, speechStarted: 0, speechStopped: 0, errors: [] };
let current = null;
const done = (code) => { console.log(JSON.stringify(out)); rt.close(); setTimeout(() => process.exit(code), 100); };
const timer = setTimeout(() => { out.errors.push('timeout'); done(1); }, 60000);

rt.on('error', (e) => out.errors.push(e.message));
rt.on('session.updated', () => {
  if (out.sessionUpdated) return;
  out.sessionUpdated = true;
  rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello from the openai client.' }] } });
  rt.send({ type: 'response.create' });
});
rt.on('response.created', (e) => { current = { id: e.response.id, audioBytes: 0, transcript: '', status: '' }; });
rt.on('response.output_audio.delta', (e) => { current.audioBytes += Buffer.from(e.delta, 'base64').length; });
rt.on('response.output_audio_transcript.delta', (e) => { current.transcript += e.delta; });
rt.on('input_audio_buffer.speech_started', () => { out.speechStarted++; });
rt.on('input_audio_buffer.speech_stopped', () => { out.speechStopped++; });
rt.on('conversation.item.input_audio_transcription.delta', (e) => {
  if (out.userTranscripts.length > 0) out.lateDeltas++;
  out.userDeltas.push({ item_id: e.item_id, delta: e.delta });
});
rt.on('conversation.item.input_audio_transcription.completed', (e) => { out.userTranscripts.push(e.transcript); out.transcribedItem = e.item_id; });
rt.on('response.done', async (e) => {
  current.status = e.response.status;
  out.responses.push(current);
  if (out.responses.length === 1) {
    // Now speak: the recording in 100 ms appends, a little faster than
    // real time.
    const audio = fs.readFileSync(audioPath);
    for (let i = 0; i < audio.length; i += bytesPer100ms) {
      rt.send({ type: 'input_audio_buffer.append', audio: audio.subarray(i, i + bytesPer100ms).toString('base64') });
      await new Promise((r) => setTimeout(r, 50));
    }
  } else {
    clearTimeout(timer);
    done(0);
  }
});
rt.socket.on('open', () => {
  rt.send({ type: 'session.update', session: {
    type: 'realtime', model: 'gpt-realtime', instructions: 'You are a test agent.', output_modalities: ['audio'],
    audio: { input: { format, transcription: { model: 'gpt-4o-transcribe' }, turn_detection: { type: 'server_vad', silence_duration_ms: 500 } }, output: { format, voice: 'espeak:en-us' } },
  } });
});
