/**
 * The HTTP endpoints in the shapes jsdev's DeviceClient takes (src/device.ts: `ServerApi`,
 * `ProxyApi`), over {@link ServerAPI} and {@link ProxyAPI}: every hostile-reply check of
 * http.ts applies. The description is handed over as JSON (the device's policy reads it),
 * artefacts as bytes under the device's limit (ETag-cached), submissions as a promise that
 * rejects with a {@link ServiceError} carrying `status` (409: already submitted).
 */
import { type EndpointOptions, ProxyAPI, ServerAPI } from "./http.js";

/** jsdev's `ServerApi`. */
export interface DeviceServerEndpoints {
  protocol(): Promise<unknown>;
  artefact(name: string, limitBytes: number): Promise<Uint8Array>;
}

/** jsdev's `ProxyApi`. */
export interface DeviceProxyEndpoints {
  round(): Promise<unknown>;
  submit(round: number, clientId: number, token: string, body: Uint8Array): Promise<void>;
  clientSecret(clientId: number, token: string): Promise<unknown>;
}

/** The server at `url` for a DeviceClient. */
export function httpServer(url: string, options: EndpointOptions = {}): DeviceServerEndpoints {
  const api = new ServerAPI(url, options);
  return {
    protocol: () => api.protocolDoc(),
    artefact: async (name, limitBytes) => (await api.artefact(name, { limit: limitBytes })).data,
  };
}

/** The proxy at `url` for a DeviceClient. */
export function httpProxy(url: string, options: EndpointOptions = {}): DeviceProxyEndpoints {
  const api = new ProxyAPI(url, options);
  return {
    round: () => api.round(),
    submit: async (round, clientId, token, body) => {
      await api.submit(round, clientId, token, body);
    },
    clientSecret: (clientId, token) => api.clientSecret(clientId, token),
  };
}
