import DataLoader from 'dataloader';
import type { Mesh } from '../../services/mesh.js';
import { appliesOfPlans, type PlanApply } from '../../services/plans/applies.js';

/** Each plan's applies, read for all the plans of a response in one statement. */
export const appliesLoader = (mesh: Pick<Mesh, 'db'>): DataLoader<string, PlanApply[]> => new DataLoader((plans) => appliesOfPlans(mesh.db, plans));
