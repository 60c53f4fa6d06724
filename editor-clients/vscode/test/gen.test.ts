import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { constants, generate, methodKey, typeName } from "../scripts/gen-protocol.mjs";
import { CAPABILITY, Methods, VERSION } from "../src/protocol";

const schema = JSON.parse(readFileSync(new URL("../../../protocol/schema.json", import.meta.url), "utf8"));

describe("protocol type generation", () => {
  it("names types after their method", () => {
    expect(typeName("agent/getTranscript.Result")).toBe("GetTranscriptResult");
    expect(typeName("command.TaskArgs")).toBe("TaskArgs");
  });

  it("gives a method the schema gains (agent/diagnostics) a type named after it, listed in ProtocolTypes", async () => {
    const grown = structuredClone(schema);
    grown.methods["agent/diagnostics.Params"] = { $ref: "#/$defs/Params99" };
    grown.$defs.Params99 = {
      type: "object",
      required: ["uri", "version", "diagnostics"],
      properties: {
        uri: { type: "string" },
        version: { type: ["integer", "null"] },
        diagnostics: { type: "array", items: { $ref: "#/$defs/Diagnostic" } },
      },
    };
    grown.$defs.Diagnostic = {
      type: "object",
      required: ["range", "message"],
      properties: { range: { $ref: "#/$defs/Range" }, message: { type: "string" }, severity: { type: ["integer", "null"] } },
    };
    const ts = await generate(grown);
    expect(ts).toMatch(/export interface DiagnosticsParams \{[^}]*diagnostics: Diagnostic\[\];/s);
    expect(ts).toMatch(/"agent\/diagnostics\.Params": DiagnosticsParams;/);
    expect(ts).not.toContain("Params99");
  });

  it("generates a constant for every method the schema lists, agent/listChanges among them", async () => {
    expect(methodKey("agentls/semanticSearch")).toBe("semanticSearch");
    const ts = await generate(schema);
    expect(ts).toContain('  listChanges: "agent/listChanges",\n');
    for (const m of [...schema.requests, ...schema.notifications]) expect(Object.values(Methods)).toContain(m);
    expect(Object.keys(Methods)).toHaveLength(schema.requests.length + schema.notifications.length);
    expect([CAPABILITY, VERSION]).toEqual([schema.capability.key, schema.capability.version]);
  });

  it("refuses two methods that would share a constant", () => {
    const bad = { ...schema, requests: [...schema.requests, "other/listChanges"] };
    expect(() => constants(bad)).toThrow(/share the key listChanges/);
  });
});
