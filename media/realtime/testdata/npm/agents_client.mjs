// Drives voiced with the published `@openai/agents-realtime` SDK (a
// RealtimeSession on its WebSocket transport, given a plain ws:// URL):
// connect, send text, then speech (PCM16 at 24 kHz), and print what came
// back as JSON.
// Usage: node agents_client.mjs <ws URL> <API key> <raw PCM16 24 kHz file>
import fs from 'node:fs';
import { RealtimeAgent, RealtimeSession, OpenAIRealtimeWebSocket } from '@openai/agents-realtime';

const [url, key, audioPath] = process.argv.slice(2);
const agent = new RealtimeAgent({ name: 'Tester', instructions: 'You are a test agent.' });
const transport = new OpenAIRealtimeWebSocket({ url });
const session = new RealtimeSession(agent, {
  transport,
  model: 'gpt-realtime',
  config: { audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-transcribe' } }, output: { format: { type: 'audio/pcm', rate: 24000 } } } },
});

const out = { connected: false, audioBytes: 0, responses: [], userTranscripts: [], assistantTranscripts: [], errors: [], types: {} };
const finish = (code) => { console.log(JSON.stringify(out)); session.close(); setTimeout(() => process.exit(code), 100); };
const timer = setTimeout(() => { out.errors.push('timeout'); finish(1); }, 60000);

session.on('audio', (ev) => { out.audioBytes += ev.data.byteLength; });
session.on('error', (ev) => { out.errors.push(String(ev.error?.error?.message ?? ev.error?.message ?? ev.error)); });
session.on('transport_event', async (ev) => {
  out.types[ev.type] = (out.types[ev.type] ?? 0) + 1;
  if (ev.type === 'conversation.item.input_audio_transcription.completed') out.userTranscripts.push(ev.transcript);
  if (ev.type === 'response.output_audio_transcript.done') out.assistantTranscripts.push(ev.transcript);
  if (ev.type !== 'response.done') return;
  out.responses.push({ status: ev.response.status, audioBytes: out.audioBytes });
  if (out.responses.length === 1) {
    const audio = fs.readFileSync(audioPath);
    for (let i = 0; i < audio.length; i += 4800) {
      const chunk = audio.subarray(i, i + 4800);
      session.sendAudio(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength));
      await new Promise((r) => setTimeout(r, 50));
    }
  } else {
    clearTimeout(timer);
    finish(0);
  }
});

await session.connect({ apiKey: key, url });
out.connected = true;
session.sendMessage('Hello from the agents SDK.');
