// Preloaded (`node --import ./bearer.mjs`) into a third-party MCP client that has no option for
// HTTP headers (the conformance suite): every HTTP request of the process — Node's fetch and
// undici's request share this global dispatcher — carries `Authorization: Bearer $MCP_BEARER_TOKEN`,
// the token `filepuff serve --http` requires. Nothing else of the request is touched (Host and
// Origin stay as the client wrote them: the DNS-rebinding checks see what the client sent).
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.MCP_BEARER_TOKEN;
if (!token) throw new Error("bearer.mjs: MCP_BEARER_TOKEN is not set");

setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) => {
    const headers = options.headers ?? {};
    const authorization = `Bearer ${token}`;
    const withToken = Array.isArray(headers)
      ? [...headers, "authorization", authorization]
      : { ...headers, authorization };
    return dispatch({ ...options, headers: withToken }, handler);
  }),
);
