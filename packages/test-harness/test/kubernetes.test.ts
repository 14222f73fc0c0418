import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as appsV1 from 'kubernetes-models/apps/v1';
import * as autoscalingV2 from 'kubernetes-models/autoscaling/v2';
import * as batchV1 from 'kubernetes-models/batch/v1';
import * as networkingV1 from 'kubernetes-models/networking.k8s.io/v1';
import * as policyV1 from 'kubernetes-models/policy/v1';
import * as coreV1 from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../src/processes.ts';

const MANIFEST = path.join(ROOT, 'deploy/kubernetes/tollgate.yaml');

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  // biome-ignore lint/suspicious/noExplicitAny: checked against the Kubernetes schema below
  spec?: any;
}

function documents(): Manifest[] {
  return parseAllDocuments(readFileSync(MANIFEST, 'utf8')).map((document) => {
    if (document.errors.length > 0) throw document.errors[0];
    return document.toJSON() as Manifest;
  });
}

type Models = Record<string, unknown>;
const GROUPS: Record<string, Models> = {
  v1: coreV1,
  'apps/v1': appsV1,
  'batch/v1': batchV1,
  'autoscaling/v2': autoscalingV2,
  'policy/v1': policyV1,
  'networking.k8s.io/v1': networkingV1,
};

/** Validates one object against the Kubernetes OpenAPI schema of its apiVersion and kind. */
async function validate(manifest: Manifest): Promise<void> {
  const Model = GROUPS[manifest.apiVersion]?.[manifest.kind] as
    | (new (
        data: unknown,
      ) => { validate(): void })
    | undefined;
  if (!Model) throw new Error(`no schema for ${manifest.apiVersion} ${manifest.kind}`);
  new Model(manifest).validate();
}

describe('deploy/kubernetes/tollgate.yaml', () => {
  it('is valid against the Kubernetes schemas, object by object', async () => {
    const all = documents();
    expect(all.length).toBeGreaterThan(5);
    for (const manifest of all) {
      await expect(validate(manifest), `${manifest.kind} ${manifest.metadata.name}`).resolves.toBeUndefined();
    }
  });

  it('catches a broken object (the check is real)', async () => {
    const deployment = documents().find((manifest) => manifest.kind === 'Deployment');
    if (!deployment) throw new Error('no Deployment');
    deployment.spec.replicas = 'three';
    await expect(validate(deployment)).rejects.toThrow();
  });

  it('has the gateway Deployment with probes, an HPA, a PodDisruptionBudget and a migrations Job', () => {
    const all = documents();
    const find = (kind: string, name: string) =>
      all.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
    const gateway = find('Deployment', 'tollgate-gateway')?.spec.template.spec.containers[0];
    expect(gateway.readinessProbe.httpGet.path).toBe('/readyz');
    expect(gateway.livenessProbe.httpGet.path).toBe('/livez');
    expect(gateway.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true });
    expect(find('HorizontalPodAutoscaler', 'tollgate-gateway')?.spec.scaleTargetRef.name).toBe(
      'tollgate-gateway',
    );
    expect(find('PodDisruptionBudget', 'tollgate-gateway')).toBeDefined();
    expect(find('Job', 'tollgate-migrate')?.spec.template.spec.containers[0].command).toEqual([
      'node',
      'bin/tollgate-admin.ts',
      'migrate',
    ]);
  });
});
